package tests

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/media/mediatest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// pngImage is a small PNG picture.
func pngImage(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := range 8 {
		img.Set(x, x, color.RGBA{R: 255, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lastUser is the last user message of the model's last request.
func lastUser(t *testing.T, llm *fakellm.Server) fakellm.Message {
	t.Helper()
	reqs := llm.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	ms := reqs[len(reqs)-1].Messages
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			return ms[i]
		}
	}
	t.Fatal("no user message")
	return fakellm.Message{}
}

// TestTelegramMedia: a photo reaches the model as an image, a PDF as its
// text, a voice note as its transcript (which history keeps); a photo too
// large and a corrupt PDF are refused with a reply that says why.
func TestTelegramMedia(t *testing.T) {
	llm := newFake(t)
	llm.SetTranscript(func(audio []byte) string {
		if !bytes.HasPrefix(audio, []byte("OggS")) {
			return "?"
		}
		return "remind me to buy oat milk"
	})
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	g := newGateway(t, llm, "telegram:\n  enabled: true\n  allowed_users: [111]\ntranscription:\n  provider: openai\n  model: whisper-1\n")
	g.env = append(g.env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "TELEGRAM_API_BASE="+tg.URL)
	g.start()

	pic := pngImage(t)
	tg.Push(faketelegram.Photo(1, 111, tg.AddFile(pic), len(pic), "what is in this picture?"))
	if ms := waitMessages(t, tg, 111, 1); ms[0].Text != "echo: what is in this picture?" {
		t.Fatalf("reply = %q", ms[0].Text)
	}
	m := lastUser(t, llm)
	if len(m.Parts) != 1 || m.Parts[0].URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(pic) {
		t.Fatalf("the model got %+v, want the photo as a data: URL", m.Parts)
	}
	// The photo is kept once, beside the session, not in the history.
	var kept []string
	filepath.WalkDir(filepath.Join(g.home, "media"), func(path string, d fs.DirEntry, err error) error {
		if b, _ := os.ReadFile(path); err == nil && !d.IsDir() && bytes.Equal(b, pic) {
			kept = append(kept, path)
		}
		return nil
	})
	if len(kept) != 1 {
		t.Fatalf("the photo is kept in %q, want one file under media/", kept)
	}
	for _, name := range []string{"lambdaclaw.db", "lambdaclaw.db-wal"} {
		if db, _ := os.ReadFile(filepath.Join(g.home, name)); bytes.Contains(db, []byte(base64.StdEncoding.EncodeToString(pic)[:40])) {
			t.Fatalf("%s holds the photo's bytes", name)
		}
	}

	pdf := mediatest.PDF(true, "INVOICE 2026-114", "Total due: 42.00 EUR")
	tg.Push(faketelegram.Document(2, 111, tg.AddFile(pdf), "invoice.pdf", "application/pdf", len(pdf), "how much do I owe?"))
	want := "echo: how much do I owe?\n\n[file invoice.pdf]\nINVOICE 2026-114\nTotal due: 42.00 EUR"
	if ms := waitMessages(t, tg, 111, 2); ms[1].Text != want {
		t.Fatalf("reply = %q, want %q", ms[1].Text, want)
	}

	voice := []byte("OggS\x00\x02 opus audio")
	tg.Push(faketelegram.Voice(3, 111, tg.AddFile(voice), len(voice)))
	want = "echo: [voice note, transcribed]\nremind me to buy oat milk"
	if ms := waitMessages(t, tg, 111, 3); ms[2].Text != want {
		t.Fatalf("reply = %q, want %q", ms[2].Text, want)
	}
	if tr := llm.Transcriptions(); len(tr) != 1 || !bytes.Equal(tr[0].Audio, voice) || tr[0].Model != "whisper-1" || tr[0].APIKey != providerKey {
		t.Fatalf("transcriptions = %+v", tr)
	}
	// The transcript is the conversation's: the next turn's model sees it.
	tg.Push(faketelegram.Message(4, 111, 111, "private", "and?"))
	waitMessages(t, tg, 111, 4)
	var history []string
	for _, m := range llm.Requests()[len(llm.Requests())-1].Messages {
		history = append(history, m.Content)
	}
	if !strings.Contains(strings.Join(history, "\n"), "remind me to buy oat milk") {
		t.Fatalf("history without the transcript: %q", history)
	}

	asked := len(llm.Requests())
	big := faketelegram.Document(5, 111, tg.AddFile(pic), "huge.png", "image/png", 50<<20, "")
	tg.Push(big)
	want = "Your file huge.png is too large: 50.0 MB, of at most 20.0 MB. Nothing of the message was kept."
	if ms := waitMessages(t, tg, 111, 5); ms[4].Text != want {
		t.Fatalf("reply = %q, want %q", ms[4].Text, want)
	}
	corrupt := []byte("%PDF-1.7\n1 0 obj << /Length 9 /Filter /FlateDecode >>\nstream\nnot zlib!\nendstream\n")
	tg.Push(faketelegram.Document(6, 111, tg.AddFile(corrupt), "scan.pdf", "application/pdf", len(corrupt), ""))
	if ms := waitMessages(t, tg, 111, 6); !strings.HasPrefix(ms[5].Text, "Your file scan.pdf could not be read: the PDF is corrupt") {
		t.Fatalf("reply = %q", ms[5].Text)
	}
	if n := len(llm.Requests()); n != asked {
		t.Fatalf("the model was asked %d more times about refused files", n-asked)
	}

	// The transcript and the PDF's text are in the chat's memory, once
	// the exchanges are recorded (off the request path).
	for i := range 5 {
		llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_search", Name: "memory_search", Arguments: `{"query":"oat milk invoice","limit":10}`}}},
			fakellm.Reply{Content: "searched"})
		tg.Push(faketelegram.Message(int64(10+i), 111, 111, "private", "what do you remember?"))
		waitMessages(t, tg, 111, 7+i)
		res, _ := toolResult(llm.Requests()[len(llm.Requests())-1], "call_search")
		if strings.Contains(res, "remind me to buy oat milk") && strings.Contains(res, "Total due: 42.00 EUR") {
			return
		}
	}
	t.Fatal("memory_search finds neither the transcript nor the PDF's text")
}

// TestTelegramSendsChart: an exec that writes a chart, then send_file,
// delivers the chart to the chat as a photo (sendPhoto), once, before the
// answer.
func TestTelegramSendsChart(t *testing.T) {
	bwrapInstalled(t)
	llm := newFake(t)
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	g := newGateway(t, llm, "telegram:\n  enabled: true\n  allowed_users: [111]\n  autonomy: full\n")
	g.env = append(g.env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "TELEGRAM_API_BASE="+tg.URL)
	g.start()
	waitEvent(t, g, "exec tool offered", nil)

	chart := pngImage(t)
	llm.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{execCall("call_plot", "echo "+base64.StdEncoding.EncodeToString(chart)+" | base64 -d > chart.png", 0)}},
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "send_file", Arguments: `{"path":"chart.png","caption":"Spending by month"}`}}},
		fakellm.Reply{Content: "Here is your chart."},
	)
	tg.Push(faketelegram.Message(1, 111, 111, "private", "plot my spending"))
	ms := waitOnly(t, tg, 111, 2)
	if !bytes.Equal(ms[0].Photo, chart) || ms[0].Text != "Spending by month" || ms[0].FileName != "chart.png" {
		t.Fatalf("first message = %+v, want the chart as a photo with its caption", ms[0])
	}
	if ms[1].Text != "Here is your chart." {
		t.Fatalf("second message = %q", ms[1].Text)
	}
	res, ok := toolResult(llm.Requests()[2], "call_send")
	if !ok || !strings.HasPrefix(res, "Sent chart.png (image/png") {
		t.Fatalf("send_file's result = %q", res)
	}
}
