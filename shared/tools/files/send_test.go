package files

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// chatSender records the files sent to a channel.
type chatSender struct{ sent []channel.File }

func (s *chatSender) SendFile(_ context.Context, _ string, f channel.File) (string, error) {
	s.sent = append(s.sent, f)
	return "1", nil
}

func TestSendFile(t *testing.T) {
	ws := osroot.New(t.TempDir())
	png := "\x89PNG\r\n\x1a\nchart"
	for name, data := range map[string]string{"chart.png": png, "big.bin": strings.Repeat("x", 101), "fake.png": "<html>"} {
		if _, err := ws.WriteFile(t.Context(), name, []byte(data), filestore.Any); err != nil {
			t.Fatal(err)
		}
	}
	store := &media.Store{FS: osroot.New(t.TempDir()), MaxBytes: 100}
	tg := &chatSender{}
	send := SendFile(store, FileSenders{"tg": tg})
	call := func(env tool.Env, args string) (string, error) {
		return send.Call(t.Context(), env, json.RawMessage(args))
	}
	chat := tool.Env{Owner: "tg:1", SessionID: "s", Workspace: ws, Channel: "tg", ReplyTo: "1"}
	if out, err := call(chat, `{"path":"chart.png","caption":"hi"}`); err != nil || out != "Sent chart.png (image/png, 13 bytes) to the conversation as a photo." {
		t.Fatalf("to a chat: %q, %v", out, err)
	}
	if len(tg.sent) != 1 || string(tg.sent[0].Data) != png || tg.sent[0].Caption != "hi" || tg.sent[0].MediaType != "image/png" {
		t.Fatalf("sent %+v", tg.sent)
	}
	api := tool.Env{Owner: "key:a", SessionID: "s", Workspace: ws, Channel: "http"}
	out, err := call(api, `{"path":"chart.png"}`)
	if err != nil || !strings.Contains(out, "is at "+MediaPath) {
		t.Fatalf("on the API: %q, %v", out, err)
	}
	ref := out[strings.Index(out, MediaPath)+len(MediaPath) : strings.Index(out, ";")]
	if data, err := store.Get(t.Context(), "key:a", ref); err != nil || string(data) != png {
		t.Fatalf("the link's file: %q, %v", data, err)
	}
	for _, tc := range []struct {
		env        tool.Env
		args, want string
	}{
		{api, `{"path":"nope.png"}`, "nope.png: no such file"},
		{api, `{"path":"big.bin"}`, "big.bin has 101 bytes; files of at most 100 can be sent"},
		{api, `{"path":"fake.png"}`, "declared image/png"},
		{api, `{"path":"../x"}`, "../x"},
		{tool.Env{Owner: "key:a", Workspace: ws}, `{"path":"chart.png"}`, "no conversation"},
		{api, `{"path":"chart.png","caption":"` + strings.Repeat("c", 1025) + `"}`, "at most 1024"},
	} {
		if _, err := call(tc.env, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args[:min(len(tc.args), 30)], err, tc.want)
		}
	}
}
