package fakellm

import (
	"strings"
	"sync/atomic"
)

// Team is a default responder (see SetDefault) that plays three agents
// by what they are asked, for the tests of delegation between agents:
// a request whose last user message is "plan" (the boss) delegates
// "task alpha" to agent alpha and "task beta" to agent beta in one reply
// (calls call_a and call_b); alpha answers "alpha done"; beta answers
// "beta done", or hangs while hang is set (a child still thinking); a
// request holding tool results (the boss again) answers "boss: " and
// the results, joined by " + ". Anything else is answered like Echo.
func Team(hang *atomic.Bool) func(Request) Reply {
	return func(req Request) Reply {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		switch last := req.LastUser(); {
		case last == "task alpha":
			return Reply{Content: "alpha done"}
		case last == "task beta" && hang.Load():
			return Reply{Hang: true}
		case last == "task beta":
			return Reply{Content: "beta done"}
		case len(results) > 0:
			return Reply{Content: "boss: " + strings.Join(results, " + ")}
		case last == "plan":
			return Reply{ToolCalls: []ToolCall{
				{ID: "call_a", Name: "delegate", Arguments: `{"agent":"alpha","message":"task alpha"}`},
				{ID: "call_b", Name: "delegate", Arguments: `{"agent":"beta","message":"task beta"}`},
			}}
		}
		return Echo(req)
	}
}

// Asked counts the requests whose last user message is text.
func (s *Server) Asked(text string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.LastUser() == text {
			n++
		}
	}
	return n
}
