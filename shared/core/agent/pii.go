package agent

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The loop is the boundary between people and tools on one side and the
// model on the other: for an agent with a PII scanner (privacy.pii:
// tokenize) this file is where personal data crosses it, and only here.
//
//   - In: a user's message (Enqueue; a client's tool results, Deliver)
//     and a tool's result (act) enter history with each value replaced
//     by the session's token, <EMAIL_1>, which the store's PIIVault
//     numbers and keeps with the session. History, and so every model
//     request, holds tokens only.
//   - Out to tools: a call's arguments have their tokens replaced by the
//     values just before the tool runs (callTool, which the sandbox's
//     bridge goes through too), so write_file of <EMAIL_1> writes the
//     address.
//   - Out to the owner: the answer (result: API, channels' outboxes,
//     Finish) and its streamed pieces (think, pii.Stream, which holds a
//     token cut between two pieces back) have their tokens revealed.
//
// A value that cannot get a token (no vault, a failing one, one longer
// than pii.MaxValueBytes, a session over store.MaxPIITokens) is redacted
// as <KIND>: the model never sees it, and the failure is logged.

// piiKey is a value's key in a token lookup.
func piiKey(kind, value string) string { return kind + "\x00" + value }

// vault is the store's PIIVault, if it keeps tokens.
func (l *Loop) vault() (store.PIIVault, bool) {
	v, ok := l.Store.(store.PIIVault)
	return v, ok
}

// hidePII replaces the personal data a's scanner finds in texts by the
// session's tokens (see above).
func (l *Loop) hidePII(ctx context.Context, a *Agent, sessionID string, texts ...*string) {
	if a.PII == nil {
		return
	}
	found := make([][]pii.Match, len(texts))
	var values []store.PIIToken
	for i, t := range texts {
		found[i] = a.PII.Find(*t)
		for _, m := range found[i] {
			if v := (*t)[m.Start:m.End]; len(v) <= pii.MaxValueBytes {
				values = append(values, store.PIIToken{Kind: m.Kind, Value: v})
			}
		}
	}
	if !anyMatch(found) {
		return
	}
	tokens := map[string]string{}
	if len(values) > 0 {
		vault, ok := l.vault()
		var all []store.PIIToken
		err := errors.New("the store keeps no tokens")
		if ok {
			all, err = vault.AddPII(ctx, sessionID, values)
		}
		if err != nil {
			l.warn("personal data redacted: no token for it", "session_id", sessionID, "error", scrub.Scrub(err.Error()))
		}
		for _, t := range all {
			tokens[piiKey(t.Kind, t.Value)] = t.Token
		}
	}
	for i, t := range texts {
		*t = pii.Replace(*t, found[i], func(m pii.Match, v string) string {
			if tok, ok := tokens[piiKey(m.Kind, v)]; ok {
				return tok
			}
			return pii.Redact(m.Kind)
		})
	}
}

func anyMatch(found [][]pii.Match) bool {
	for _, ms := range found {
		if len(ms) > 0 {
			return true
		}
	}
	return false
}

// hideMessages hides the personal data of the messages a person or a
// client sends (users' and tools' contents), in a copy.
func (l *Loop) hideMessages(ctx context.Context, a *Agent, sessionID string, msgs []chat.Message) []chat.Message {
	if a.PII == nil {
		return msgs
	}
	out := make([]chat.Message, len(msgs))
	copy(out, msgs)
	var texts []*string
	for i := range out {
		if out[i].Role == chat.User || out[i].Role == chat.Tool {
			texts = append(texts, &out[i].Content)
		}
	}
	l.hidePII(ctx, a, sessionID, texts...)
	return out
}

// hideSystem hides the personal data of system messages, in a copy of
// msgs when there is any (the prompt's messages are shared).
func (l *Loop) hideSystem(ctx context.Context, a *Agent, sessionID string, msgs []chat.Message) []chat.Message {
	if a.PII == nil {
		return msgs
	}
	out := slices.Clone(msgs)
	var texts []*string
	for i := range out {
		if out[i].Role == chat.System {
			texts = append(texts, &out[i].Content)
		}
	}
	l.hidePII(ctx, a, sessionID, texts...)
	return out
}

// piiValues returns the lookup of the session's tokens' values, nil when
// a tokenizes nothing or the tokens cannot be read (logged: the owner
// then sees tokens).
func (l *Loop) piiValues(ctx context.Context, a *Agent, sessionID string) func(string) (string, bool) {
	if a.PII == nil {
		return nil
	}
	vault, ok := l.vault()
	if !ok {
		return nil
	}
	all, err := vault.PIITokens(ctx, sessionID)
	if err != nil {
		l.warn("personal data tokens not revealed", "session_id", sessionID, "error", scrub.Scrub(err.Error()))
		return nil
	}
	if len(all) == 0 {
		return nil
	}
	byToken := make(map[string]string, len(all))
	for _, t := range all {
		byToken[t.Token] = t.Value
	}
	return func(tok string) (string, bool) {
		v, ok := byToken[tok]
		return v, ok
	}
}

// revealArgs returns a tool call's JSON arguments with the session's
// tokens replaced by their values.
func (l *Loop) revealArgs(ctx context.Context, a *Agent, sessionID, args string) string {
	if value := l.piiValues(ctx, a, sessionID); value != nil {
		return pii.RevealJSON(args, value)
	}
	return args
}

// revealResult reveals the tokens of what a run tells its owner: the
// answer and the arguments of the client's calls.
func (l *Loop) revealResult(ctx context.Context, st RunState, res Result) Result {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok || a.PII == nil {
		return res
	}
	value := l.piiValues(ctx, a, st.SessionID)
	if value == nil {
		return res
	}
	res.Content = pii.Reveal(res.Content, value)
	if len(res.ToolCalls) > 0 {
		calls := make([]chat.ToolCall, len(res.ToolCalls))
		for i, c := range res.ToolCalls {
			c.Arguments = pii.RevealJSON(c.Arguments, value)
			calls[i] = c
		}
		res.ToolCalls = calls
	}
	return res
}

// revealStream wraps emit, which passes streamed text to the owner, with
// the revealing of the session's tokens; emit itself when a tokenizes
// nothing. The value lookup is read at the first piece that may hold a
// token, so a plain stream costs no read.
func (l *Loop) revealStream(ctx context.Context, a *Agent, sessionID string, emit func(string)) (func(string), func()) {
	if a.PII == nil {
		return emit, func() {}
	}
	var value func(string) (string, bool)
	read := false
	s := pii.NewStream(emit, func(tok string) (string, bool) {
		if !read {
			value, read = l.piiValues(ctx, a, sessionID), true
		}
		if value == nil {
			return "", false
		}
		return value(tok)
	})
	return s.Write, s.Flush
}

// warn logs at warning level when the loop has a log.
func (l *Loop) warn(msg string, args ...any) {
	if l.Log != nil {
		l.Log.Warn(msg, args...)
	}
}

// prepareTokens makes sure, before tokens are written for in's messages,
// that its session exists and is in.Owner's: a new session's tokens
// must not be written before it (a store may clear what a session of the
// same id left when it creates one), nor any for another owner's
// session. It reports whether it created the session. Messages without
// personal data need none of it.
func (l *Loop) prepareTokens(ctx context.Context, a *Agent, in Input, now time.Time) (bool, error) {
	found := false
	for _, m := range in.Messages {
		if (m.Role == chat.User || m.Role == chat.Tool) && len(a.PII.Find(m.Content)) > 0 {
			found = true
			break
		}
	}
	if !found {
		return false, nil
	}
	for range 2 {
		sess, err := l.Store.GetSession(ctx, in.SessionID)
		switch {
		case err == nil && sess.Owner != in.Owner:
			return false, store.ErrForbidden
		case err == nil:
			return false, nil
		case !errors.Is(err, store.ErrNotFound):
			return false, err
		}
		err = l.Store.CreateSession(ctx, store.Session{ID: in.SessionID, Agent: in.Agent, Owner: in.Owner,
			Channel: cmp.Or(in.Channel, in.Reply.Channel), Ephemeral: in.Ephemeral, CreatedAt: now, UpdatedAt: now})
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrExists) {
			return false, err
		}
	}
	return false, store.ErrForbidden
}
