package telegram_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// outboxStore records the outbox; the drafts use nothing else of a store.
type outboxStore struct {
	store.Channel
	mu   sync.Mutex
	msgs []store.OutboxMessage
}

func (s *outboxStore) AddOutbox(_ context.Context, msgs []store.OutboxMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
	return nil
}

// UnsentOutbox reports nothing pending, so a serverless Flush sends nothing.
func (s *outboxStore) UnsentOutbox(context.Context, int) ([]store.OutboxMessage, error) {
	return nil, nil
}

const interval = 40 * time.Millisecond

func newDraftReplier(t *testing.T, serverless bool) (*telegram.Replier, *faketelegram.Server, *outboxStore) {
	t.Helper()
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	st := &outboxStore{}
	ch, err := telegram.NewReplier(telegram.Config{Client: telegram.NewClient(tg.URL, faketelegram.Token), Store: st,
		DraftInterval: interval, Serverless: serverless})
	if err != nil {
		t.Fatal(err)
	}
	return ch, tg, st
}

// stream plays a slow streamed reply of a run to chatID and finishes it.
func stream(ch *telegram.Replier, runID string, chatID int64, pieces ...string) {
	r := agent.RunState{RunID: runID, Reply: agent.Reply{Channel: telegram.ChannelName, To: strconv.FormatInt(chatID, 10)}}
	full := ""
	for _, p := range pieces {
		ch.Delta(r, p)
		full += p
		time.Sleep(3 * interval)
	}
	ch.Finish(r, agent.Result{Content: full})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDraftsWithSendMessageDraft(t *testing.T) {
	ch, tg, st := newDraftReplier(t, false)
	stream(ch, "run-1", 111, "Hello", ", wor", "ld")
	ds := tg.Drafts(111)
	if len(ds) < 2 || ds[len(ds)-1].Text != "Hello, world" {
		t.Fatalf("drafts = %+v", ds)
	}
	for _, d := range ds {
		if d.DraftID == 0 || d.DraftID != ds[0].DraftID {
			t.Fatalf("draft ids differ or are zero: %+v", ds)
		}
	}
	if n := tg.Calls("sendMessage") + tg.Calls("editMessageText"); n != 0 {
		t.Fatalf("%d sendMessage/editMessageText calls while drafts work", n)
	}
	// Drafts are not messages: the answer goes to the outbox.
	if len(st.msgs) != 1 || st.msgs[0].Text != "Hello, world" || st.msgs[0].To != "111" {
		t.Fatalf("outbox = %+v", st.msgs)
	}
	// Throttled: a draft per DraftInterval at most, not one per delta.
	if n := tg.Calls("sendMessageDraft"); n > 4 {
		t.Fatalf("sendMessageDraft calls = %d for 3 deltas", n)
	}
}

func TestDraftsFallBackOnOldServer(t *testing.T) {
	ch, tg, _ := newDraftReplier(t, false)
	tg.Unsupported("sendMessageDraft")
	stream(ch, "run-1", 111, "Hello", ", world")
	if tg.Calls("sendMessage") != 1 || tg.Calls("editMessageText") < 1 {
		t.Fatalf("fallback: sendMessage %d, editMessageText %d", tg.Calls("sendMessage"), tg.Calls("editMessageText"))
	}
	// The draft message is deleted once the run finishes.
	waitFor(t, "draft message deleted", func() bool { return len(tg.Messages(111)) == 0 && tg.Calls("deleteMessage") == 1 })
	// The server is remembered not to know the method, in every chat.
	stream(ch, "run-2", 222, "Hi", " again")
	if n := tg.Calls("sendMessageDraft"); n != 1 {
		t.Fatalf("sendMessageDraft calls = %d, want 1", n)
	}
	if len(tg.Drafts(111))+len(tg.Drafts(222)) != 0 || tg.Calls("sendMessage") != 2 {
		t.Fatalf("second run: drafts %d, sendMessage %d", len(tg.Drafts(222)), tg.Calls("sendMessage"))
	}
}

func TestDraftsRefusedPerChat(t *testing.T) {
	ch, tg, _ := newDraftReplier(t, false)
	tg.FailNext("sendMessageDraft", faketelegram.Failure{Code: 400, Description: "Bad Request: drafts are not allowed in this chat"})
	stream(ch, "run-1", 333, "Hello", ", world")
	if tg.Calls("sendMessageDraft") != 1 || tg.Calls("sendMessage") != 1 || tg.Calls("editMessageText") < 1 {
		t.Fatalf("refused chat: draft %d, sendMessage %d, edit %d", tg.Calls("sendMessageDraft"), tg.Calls("sendMessage"), tg.Calls("editMessageText"))
	}
	stream(ch, "run-2", 333, "Again")
	if tg.Calls("sendMessageDraft") != 1 {
		t.Fatal("the refusing chat was asked for a draft again")
	}
	// Other private chats keep their drafts; groups never get them.
	stream(ch, "run-3", 444, "Hi")
	if len(tg.Drafts(444)) != 1 {
		t.Fatalf("chat 444 drafts = %+v", tg.Drafts(444))
	}
	before := tg.Calls("sendMessageDraft")
	stream(ch, "run-4", -1001, "Group", " reply")
	if tg.Calls("sendMessageDraft") != before || tg.Calls("editMessageText") < 2 {
		t.Fatalf("group chat: sendMessageDraft %d→%d", before, tg.Calls("sendMessageDraft"))
	}
}

func TestNoDraftsServerless(t *testing.T) {
	ch, tg, st := newDraftReplier(t, true)
	stream(ch, "run-1", 111, "Hello", ", world")
	if n := tg.Calls("sendMessageDraft") + tg.Calls("editMessageText") + tg.Calls("deleteMessage"); n != 0 {
		t.Fatalf("serverless draft calls = %d", n)
	}
	if len(st.msgs) != 1 {
		t.Fatalf("outbox = %+v", st.msgs)
	}
}
