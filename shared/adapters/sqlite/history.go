package sqlite

import (
	"slices"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// maxHistoryBytes bounds the text of the histories a DB keeps in memory.
const maxHistoryBytes = 32 << 20

// histories keeps the histories of sessions as last read, each with the
// session's history version (sessions.history_version), which triggers
// change at every write of the session's messages, by any connection or
// process. A history is good while its version is the session's: reading
// it again then costs one small query instead of decoding every message.
type histories struct {
	mu       sync.Mutex
	sessions map[string]history
	bytes    int
}

type history struct {
	version int64
	msgs    []store.Message
	bytes   int
}

// get returns a copy of the history of session kept at version.
func (h *histories) get(session string, version int64) ([]store.Message, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.sessions[session]
	if !ok || e.version != version {
		return nil, false
	}
	return cloneMessages(e.msgs), true
}

// put keeps a copy of msgs as the history of session at version, while
// the histories kept stay within maxHistoryBytes: others are dropped to
// make room, and a history too large for a quarter of it is not kept.
func (h *histories) put(session string, version int64, msgs []store.Message) {
	size := 0
	for _, m := range msgs {
		size += len(m.Key) + len(m.Content)
		for _, c := range m.ToolCalls {
			size += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.sessions[session]; ok {
		delete(h.sessions, session)
		h.bytes -= old.bytes
	}
	if size > maxHistoryBytes/4 {
		return
	}
	for s, e := range h.sessions {
		if h.bytes+size <= maxHistoryBytes {
			break
		}
		delete(h.sessions, s)
		h.bytes -= e.bytes
	}
	if h.sessions == nil {
		h.sessions = map[string]history{}
	}
	h.sessions[session] = history{version: version, msgs: cloneMessages(msgs), bytes: size}
	h.bytes += size
}

// cloneMessages copies msgs deep enough that neither copy changes the
// other: only the tool calls are shared otherwise.
func cloneMessages(msgs []store.Message) []store.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
	}
	return out
}
