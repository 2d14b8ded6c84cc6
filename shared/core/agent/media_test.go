package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// mediaStore keeps parts' bytes in memory, by session and owner.
type mediaStore struct {
	mu    sync.Mutex
	files map[string][]byte // session/owner/ref → bytes
}

func (m *mediaStore) Put(_ context.Context, owner, session string, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string][]byte{}
	}
	ref := fmt.Sprintf("%s/%x", session, len(data)) + string(data[len(data)-1])
	m.files[owner+"|"+ref] = data
	return ref, nil
}

func (m *mediaStore) Get(_ context.Context, owner, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.files[owner+"|"+ref]; ok {
		return d, nil
	}
	return nil, errors.New("no such file")
}

func (m *mediaStore) DeleteSession(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.files {
		if _, ref, _ := strings.Cut(k, "|"); strings.HasPrefix(ref, session+"/") {
			delete(m.files, k)
		}
	}
	return nil
}

func (m *mediaStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.files)
}

func png(tag string) chat.Part {
	return chat.Part{Type: chat.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n" + tag)}
}

// History keeps a reference of a part's bytes, which the model gets back;
// bytes that are gone are said to be; a reset deletes them.
func TestPartsKeptBeside(t *testing.T) {
	f := newFixture(t, 5)
	media := &mediaStore{}
	f.loop.Media = media
	f.llm.script = append(f.llm.script, say("a cat"), say("still a cat"), say("gone"))
	image := png("1")
	in := clientInput("s", "what is this?")
	in.Options = Options{}
	in.Messages[0].Parts = []chat.Part{image}
	st, err := f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	kept := f.history(t, "s")[0].Parts
	if len(kept) != 1 || kept[0].Data != nil || kept[0].Ref == "" || kept[0].MediaType != "image/png" {
		t.Fatalf("history keeps %+v, want a reference without the bytes", kept)
	}
	if got := f.llm.seen[0].Messages; !cmp.Equal(got[len(got)-1].Parts, []chat.Part{{Type: chat.PartImage, MediaType: "image/png", Data: image.Data, Ref: kept[0].Ref}}) {
		t.Fatalf("the model got %+v, want the image's bytes", got[len(got)-1].Parts)
	}
	ask := func(text string) llm.Request {
		st, err := f.loop.Enqueue(t.Context(), clientInputPlain("s", text))
		if err != nil {
			t.Fatal(err)
		}
		f.runToEnd(t, st)
		return f.llm.seen[len(f.llm.seen)-1]
	}
	if req := ask("and now?"); len(req.Messages[0].Parts) != 1 || string(req.Messages[0].Parts[0].Data) != string(image.Data) {
		t.Fatalf("the next turn's model got %+v", req.Messages[0])
	}
	media.DeleteSession(t.Context(), "s")
	if req := ask("and now?"); len(req.Messages[0].Parts) != 0 || !strings.Contains(req.Messages[0].Content, "[an earlier image, no longer kept]") {
		t.Fatalf("a part whose bytes are gone: the model got %+v", req.Messages[0])
	}
	media.Put(t.Context(), "key:k1", "s", image.Data)
	if err := f.loop.Reset(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if n := media.count(); n != 0 {
		t.Fatalf("%d files left after the reset", n)
	}
}

func clientInputPlain(session, text string) Input {
	in := clientInput(session, text)
	in.Options = Options{}
	return in
}

// A compaction's summary is made from the latest images of the old
// turns, shown to the model to put in words; earlier ones are named.
func TestCompactionSummarisesImages(t *testing.T) {
	f, _ := compactFixture(t)
	f.loop.Media = &mediaStore{}
	var summary llm.Request
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		if strings.HasPrefix(req.Messages[0].Content, summaryPrompt) && summary.Messages == nil {
			summary = req
		}
		return say("ok")(req)
	}
	for i := range 4 {
		in := clientInputPlain("s", fmt.Sprint("turn ", i))
		if i == 0 {
			in.Messages[0].Parts = []chat.Part{png("a"), png("b"), png("c"), png("d"), png("e")}
		}
		st, err := f.loop.Enqueue(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		f.runToEnd(t, st)
	}
	if summary.Messages == nil {
		t.Fatal("no summary was asked for")
	}
	var shown string
	for _, p := range summary.Messages[1].Parts {
		shown += string(p.Data[len(p.Data)-1:])
	}
	if shown != "bcde" {
		t.Errorf("images shown = %q, want the latest four", shown)
	}
	want := "user: [user sent an image, not shown]\n[user sent an image: image 1 of those attached]\n"
	if transcript := summary.Messages[1].Content; !strings.HasPrefix(transcript, want) || !strings.Contains(summary.Messages[0].Content, "Describe in words") {
		t.Fatalf("summary request: %q / %q", summary.Messages[0].Content, transcript)
	}
}
