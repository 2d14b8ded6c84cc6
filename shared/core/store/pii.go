package store

import (
	"context"
	"errors"
	"fmt"
)

// PIIToken is a personal value of a session (an e-mail address, a phone
// number) and the token the model sees in its place, <KIND_n>.
type PIIToken struct {
	Token string `json:"token"`
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// MaxPIITokens bounds the tokens of one session.
const MaxPIITokens = 2000

// ErrPIIFull is AddPII's error when a session has MaxPIITokens tokens.
var ErrPIIFull = errors.New("the session has as many personal data tokens as it may keep")

// PIIVault keeps each session's tokens of personal data (core/pii, the
// loop's privacy.pii: tokenize). A session's tokens go with it
// (DeleteSession). It is not part of Store: the loop asks for it where
// an agent tokenizes.
type PIIVault interface {
	// PIITokens returns the session's tokens, in the order given.
	PIITokens(ctx context.Context, sessionID string) ([]PIIToken, error)
	// AddPII gives each of values (Kind and Value; Token is ignored)
	// that has no token in the session the next of its kind, atomically:
	// a value has one token, and two processes adding at once never give
	// one token two values. It returns all the session's tokens after.
	// It is ErrPIIFull past MaxPIITokens, writing nothing.
	AddPII(ctx context.Context, sessionID string, values []PIIToken) ([]PIIToken, error)
}

// AssignPII is AddPII's numbering, which every adapter shares: the tokens
// to add to have for values, each value without one getting
// <KIND_n>, n one more than the kind's highest.
func AssignPII(have, values []PIIToken) ([]PIIToken, error) {
	byValue := make(map[string]bool, len(have))
	next := map[string]int{}
	for _, t := range have {
		byValue[t.Kind+"\x00"+t.Value] = true
		var n int
		if _, err := fmt.Sscanf(t.Token[len(t.Kind)+2:], "%d>", &n); err == nil && n > next[t.Kind] {
			next[t.Kind] = n
		}
	}
	var add []PIIToken
	for _, v := range values {
		k := v.Kind + "\x00" + v.Value
		if byValue[k] || v.Value == "" {
			continue
		}
		byValue[k] = true
		next[v.Kind]++
		add = append(add, PIIToken{Token: fmt.Sprintf("<%s_%d>", v.Kind, next[v.Kind]), Kind: v.Kind, Value: v.Value})
	}
	if len(have)+len(add) > MaxPIITokens {
		return nil, ErrPIIFull
	}
	return add, nil
}
