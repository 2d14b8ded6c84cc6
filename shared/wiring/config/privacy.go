package config

import (
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
)

// Privacy is what an agent's model may see of people's personal data:
//
//	agents:
//	  support:
//	    privacy:
//	      pii: tokenize
//	      patterns:
//	        - {name: EMPLOYEE, regex: 'EMP-[0-9]{6}'}
//
// With pii: tokenize, e-mail addresses, phone numbers, payment card
// numbers, IBANs and the patterns' matches in user messages and tool
// results reach the model as tokens of the session (<EMAIL_1>), which the
// loop turns back into the values in the model's tool calls and in the
// replies to the session's owner (core/pii; agent/pii.go).
type Privacy struct {
	// PII is off (the default) or tokenize.
	PII string `yaml:"pii" json:"pii,omitempty"`
	// Patterns are the operator's own kinds of personal data.
	Patterns []PIIPattern `yaml:"patterns" json:"patterns,omitempty"`
}

// PIIPattern is a kind of personal data: its name, the tokens' KIND
// (upper case letters and digits), and a regular expression (Go's RE2).
type PIIPattern struct {
	Name  string `yaml:"name" json:"name"`
	Regex string `yaml:"regex" json:"regex"`
}

// Scanner returns the scanner of the agent's personal data, nil when it
// tokenizes none; an error for a setting it cannot use.
func (p *Privacy) Scanner() (*pii.Scanner, error) {
	if p == nil {
		return nil, nil
	}
	switch p.PII {
	case "", "off":
		if len(p.Patterns) > 0 {
			return nil, fmt.Errorf("patterns are set but pii is %q: set pii: tokenize", p.PII)
		}
		return nil, nil
	case "tokenize":
	default:
		return nil, fmt.Errorf("pii is %q; want off or tokenize", p.PII)
	}
	s := &pii.Scanner{}
	for _, pt := range p.Patterns {
		compiled, err := pii.NewPattern(pt.Name, pt.Regex)
		if err != nil {
			return nil, err
		}
		s.Patterns = append(s.Patterns, compiled)
	}
	return s, nil
}
