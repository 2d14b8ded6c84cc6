package telegram

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// draftClient is what streamed drafts need of the Bot API (Client).
type draftClient interface {
	SendMessageDraft(ctx context.Context, chatID, draftID int64, text string) error
	SendMessage(ctx context.Context, chatID int64, text string) (int64, error)
	EditMessageText(ctx context.Context, chatID, messageID int64, text string) error
	DeleteMessage(ctx context.Context, chatID, messageID int64) error
}

// drafts shows the streamed replies of runs while they are written, at
// most once per interval, with sendMessageDraft where the server and the
// chat allow it, else as a message edited with editMessageText.
type drafts struct {
	client   draftClient
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	active map[string]*draft
	// noAPI is set once the Bot API server does not know
	// sendMessageDraft; noChats holds the chats that refused drafts.
	// Both fall back to a message edited with editMessageText.
	noAPI   bool
	noChats map[int64]bool
}

func newDrafts(client draftClient, interval time.Duration, log *slog.Logger) *drafts {
	return &drafts{client: client, interval: interval, log: log, active: map[string]*draft{}, noChats: map[int64]bool{}}
}

// draft is the streamed reply of a run while it is written.
type draft struct {
	chatID int64
	// id is the run's sendMessageDraft draft_id (non-zero).
	id   int64
	stop chan struct{}

	mu   sync.Mutex
	text strings.Builder
}

// write adds text to the draft of runID in chatID, starting its loop on
// the first text.
func (ds *drafts) write(runID string, chatID int64, text string) {
	ds.mu.Lock()
	d := ds.active[runID]
	if d == nil {
		d = &draft{chatID: chatID, id: runDraftID(runID), stop: make(chan struct{})}
		ds.active[runID] = d
		go ds.loop(d)
	}
	ds.mu.Unlock()
	d.mu.Lock()
	d.text.WriteString(text)
	d.mu.Unlock()
}

// stop ends the draft of runID, if any; a draft message (the
// editMessageText fallback) is deleted, as the final reply replaces it,
// and a sendMessageDraft draft is left to expire.
func (ds *drafts) stop(runID string) {
	ds.mu.Lock()
	d := ds.active[runID]
	delete(ds.active, runID)
	ds.mu.Unlock()
	if d != nil {
		close(d.stop)
	}
}

// runDraftID derives a non-zero draft_id from a run id, the same for every
// update of the run's draft.
func runDraftID(runID string) int64 {
	h := fnv.New32a()
	h.Write([]byte(runID))
	if id := int64(h.Sum32() & 0x7fffffff); id != 0 {
		return id
	}
	return 1
}

// use reports whether chatID may get sendMessageDraft drafts: the server
// knows the method, the chat did not refuse it, and the chat is private
// (private chat ids are positive; groups and channels are not).
func (ds *drafts) use(chatID int64) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return chatID > 0 && !ds.noAPI && !ds.noChats[chatID]
}

// fallback records that err from sendMessageDraft rules drafts out, for
// every chat or for chatID, and reports whether it did.
func (ds *drafts) fallback(chatID int64, err error) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	switch {
	case DraftsUnsupported(err):
		if !ds.noAPI {
			ds.log.Info("sendMessageDraft unsupported by the Bot API server; drafts fall back to editMessageText", "error", err)
		}
		ds.noAPI = true
	case DraftsRefused(err):
		ds.log.Info("drafts refused in chat; falling back to editMessageText", "chat_id", chatID, "error", err)
		ds.noChats[chatID] = true
	default:
		return false
	}
	return true
}

// loop shows d's text each interval until d is stopped.
func (ds *drafts) loop(d *draft) {
	var msgID int64
	var shown string
	t := time.NewTicker(ds.interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			if msgID != 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := ds.client.DeleteMessage(ctx, d.chatID, msgID); err != nil {
					ds.log.Debug("delete draft", "error", err)
				}
				cancel()
			}
			return
		case <-t.C:
		}
		d.mu.Lock()
		text := d.text.String()
		d.mu.Unlock()
		if n := prefixWithin(text, MaxMessageLen-1); n < len(text) {
			text = text[:n] + "…"
		}
		if strings.TrimSpace(text) == "" || text == shown {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		if msgID == 0 && ds.use(d.chatID) {
			err = ds.client.SendMessageDraft(ctx, d.chatID, d.id, text)
			if err != nil && ds.fallback(d.chatID, err) {
				// Show it at once as a message instead.
				msgID, err = ds.client.SendMessage(ctx, d.chatID, text)
			}
		} else if msgID == 0 {
			msgID, err = ds.client.SendMessage(ctx, d.chatID, text)
		} else {
			err = ds.client.EditMessageText(ctx, d.chatID, msgID, text)
		}
		cancel()
		var ae *APIError
		switch {
		case err == nil:
			shown = text
		case errors.As(err, &ae) && ae.RetryAfter > 0:
			sleepOrStop(d.stop, ae.RetryAfter)
		default:
			ds.log.Debug("draft update", "error", err)
		}
	}
}

func sleepOrStop(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}
