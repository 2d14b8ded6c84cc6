package llm

import (
	"fmt"
	"slices"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// PartsChecker is implemented by providers that cannot take every part
// of a message (chat.Part): a kind their model does not read, a format
// their API has no block for. The wrappers pass the question on.
type PartsChecker interface {
	// CheckPart returns an *UnsupportedError for a part the provider
	// cannot send its model, or nil.
	CheckPart(p chat.Part) error
}

// CheckParts asks provider whether it can take every part of msgs; the
// error's Param names the first it cannot take by its message and
// position ("messages[2].parts[0]"). A provider that does not implement
// PartsChecker takes every part.
func CheckParts(provider Provider, msgs []chat.Message) error {
	c, ok := provider.(PartsChecker)
	if !ok {
		return nil
	}
	for i, m := range msgs {
		for j, p := range m.Parts {
			if err := c.CheckPart(p); err != nil {
				if u, ok := err.(*UnsupportedError); ok {
					u.Param = fmt.Sprintf("messages[%d].parts[%d] (%s)", i, j, u.Param)
				}
				return err
			}
		}
	}
	return nil
}

// Accepts is a model's input kinds, as configured (a provider's
// `input`): besides text, which every model takes, images, audio and
// files.
type Accepts []chat.PartType

// Check refuses a part of a kind a is without, naming the provider and
// the kinds it takes.
func (a Accepts) Check(provider string, p chat.Part) error {
	if slices.Contains(a, p.Type) {
		return nil
	}
	return &UnsupportedError{Provider: provider, Param: string(p.Type),
		Reason: fmt.Sprintf("its model takes %v (the provider's input setting)", a.kinds())}
}

func (a Accepts) kinds() []chat.PartType {
	return append([]chat.PartType{chat.PartText}, slices.DeleteFunc(slices.Clone(a), func(t chat.PartType) bool { return t == chat.PartText })...)
}

// CheckPart implements PartsChecker for the wrapped provider.
func (r *retrier) CheckPart(p chat.Part) error { return checkPart(r.p, p) }

// CheckPart implements PartsChecker for the wrapped provider.
func (b *breaker) CheckPart(p chat.Part) error { return checkPart(b.p, p) }

// CheckPart implements PartsChecker: every provider of the chain must
// take p, since any of them may answer.
func (c *chain) CheckPart(p chat.Part) error {
	for _, pr := range c.ps {
		if err := checkPart(pr, p); err != nil {
			return err
		}
	}
	return nil
}

func checkPart(provider Provider, p chat.Part) error {
	if c, ok := provider.(PartsChecker); ok {
		return c.CheckPart(p)
	}
	return nil
}
