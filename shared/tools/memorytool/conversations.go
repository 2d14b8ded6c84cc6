package memorytool

import (
	"context"
	"errors"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Limits of a conversation memory, so that one long answer does not cost
// dozens of embedded chunks.
const (
	maxConversationInput  = 4 << 10
	maxConversationAnswer = 12 << 10
)

// Conversations is the agent.Recorder that remembers past conversations:
// each successful run of a durable session becomes a conversation memory
// of its agent and of the session's owner (Exchange.Owner), the user's
// message and the final answer, under the key "run:<run id>" with source
// "session:<session id>". Only that owner's sessions find it. Storing the
// same run again replaces its memory with the same text, so a retried
// finish step changes nothing. Conversation memories fade in search with
// age.
//
// An exchange without an owner is not remembered: a conversation is
// someone's, and one whose owner is unknown would otherwise become
// agent-wide, found by every user of the agent.
type Conversations struct {
	mem *memory.Memory
}

var _ agent.Recorder = (*Conversations)(nil)

// NewConversations returns a Conversations storing into m.
func NewConversations(m *memory.Memory) (*Conversations, error) {
	if m == nil {
		return nil, errors.New("memorytool: nil memory")
	}
	return &Conversations{mem: m}, nil
}

// Record stores the exchanges, each for its owner (an exchange without
// one is skipped), in one write. An embedding failure is reported
// (wrapping memory.ErrNotEmbedded) although the exchanges were stored for
// keyword search.
func (c *Conversations) Record(ctx context.Context, xs []agent.Exchange) error {
	es := make([]memory.Entry, 0, len(xs))
	for _, x := range xs {
		if x.Owner == "" {
			continue
		}
		text := "User: " + clip(x.Input, maxConversationInput) + "\n\nAssistant: " + clip(x.Answer, maxConversationAnswer)
		es = append(es, memory.Entry{
			Agent: x.Agent, Owner: x.Owner, Key: ConversationKeyPrefix + x.RunID, Text: text, Category: memory.Conversation,
			Source: "session:" + x.SessionID, CreatedAt: x.At, UpdatedAt: x.At,
		})
	}
	if len(es) == 0 {
		return nil
	}
	if err := c.mem.StoreMany(ctx, es); err != nil {
		return fmt.Errorf("remember %d exchanges: %w", len(es), err)
	}
	return nil
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncateUTF8(s, n) + " […]"
}
