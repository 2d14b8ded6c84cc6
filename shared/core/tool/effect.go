package tool

import (
	"encoding/json"
	"fmt"
)

// Effect is what a tool action does to the world. The loop derives who may
// call it, whether a person is asked first, and what a restart does to a
// call that started and has no result, from the effect alone
// (Policy.Judge, Policy.Retryable), so a tool cannot forget a rule.
//
// The zero value is External, the most guarded: an effect left undeclared
// is treated as a side effect outside lambdaclaw.
type Effect int

// Effects, from the most guarded to the least.
const (
	// External is a side effect outside lambdaclaw's records: a command
	// run, a message sent, a call to a server whose effect is unknown.
	External Effect = iota
	// WriteShared writes what every key of the agent sees: its workspace
	// (bootstrap files, MEMORY.md, skills, files).
	WriteShared
	// WriteOwn writes only the calling owner's own records (their
	// memories, their jobs).
	WriteOwn
	// Read changes nothing.
	Read
)

var effectNames = []string{"external", "shared_write", "own_write", "read"}

func (e Effect) String() string {
	if e < 0 || int(e) >= len(effectNames) {
		return fmt.Sprintf("effect(%d)", int(e))
	}
	return effectNames[e]
}

// Verdict is what the policy says about one call before it runs.
type Verdict int

// Verdicts.
const (
	Allow Verdict = iota
	Ask
	Deny
)

// Judge is the rule every call is held to, by its effect and the run's
// autonomy: read_only runs reads only; supervised runs reads and writes
// to the owner's own records, and is asked before a write others see or
// an external side effect; full runs everything.
func Judge(e Effect, a Autonomy) Verdict {
	switch {
	case e == Read, a == Full:
		return Allow
	case a == ReadOnly:
		return Deny
	case e == WriteOwn:
		return Allow
	}
	return Ask
}

// EffectOf is the effect of one call with args: the effect its action
// declares in Actions, or the tool's Effect when it has no such action
// (or args cannot be read).
func (p Policy) EffectOf(args json.RawMessage) Effect {
	if p.ActionArg == "" || len(p.Actions) == 0 {
		return p.Effect
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return p.Effect
	}
	var action string
	if json.Unmarshal(m[p.ActionArg], &action) != nil {
		return p.Effect
	}
	if e, ok := p.Actions[action]; ok {
		return e
	}
	return p.Effect
}

// Least is the least guarded effect of any of the tool's actions: what
// decides whether the tool is offered at all at an autonomy level.
func (p Policy) Least() Effect {
	least := p.Effect
	for _, e := range p.Actions {
		least = max(least, e)
	}
	return least
}

// Retryable says whether a call with args that started and never
// finished (a crash, a restart) may run again: reads and idempotent
// tools may; anything else is reported as interrupted instead.
func (p Policy) Retryable(args json.RawMessage) bool {
	return p.Idempotent || p.EffectOf(args) == Read
}
