package sqlite

import (
	"slices"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// maxHistoryBytes bounds the text of the histories a DB keeps in memory.
const maxHistoryBytes = 16 << 20

// histories keeps the histories of sessions as last read, each with the
// session's history version (sessions.history_version), which triggers
// change at every write of the session's messages but appends, by any
// connection or process. While the version is the session's, the history
// kept and the messages after its last key are the session's history:
// reading it costs decoding what was appended, not every message.
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

// get returns a copy of the history kept of session, with its version.
func (h *histories) get(session string) (history, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.sessions[session]
	if !ok {
		return history{}, false
	}
	e.msgs = cloneMessages(e.msgs)
	return e, true
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
	h.drop(session)
	h.mu.Lock()
	defer h.mu.Unlock()
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

// drop forgets the history of a session that was deleted (a stateless
// request's, once its run is done), which no read would replace.
func (h *histories) drop(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.sessions[session]; ok {
		delete(h.sessions, session)
		h.bytes -= e.bytes
	}
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
