// Package fakeslack is a fake of Slack for tests, speaking its wire
// format: the Web API methods the channel calls (auth.test,
// chat.postMessage, chat.update, chat.delete, apps.connections.open)
// under /api/, with bearer tokens checked (not_authed, invalid_auth,
// not_allowed_token_type), HTTP 200 {"ok":false,"error":...} answers,
// Block Kit limits (invalid_blocks), and 429 with Retry-After on demand;
// the messages the bot posted, edited and deleted; signed deliveries of
// Events API callbacks and interactivity payloads to a Request URL, as
// Slack makes them; and a Socket Mode endpoint (hello, events_api and
// interactive envelopes, acknowledgements, disconnect).
package fakeslack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
)

// The fake's workspace, app and secrets.
const (
	BotToken      = "xoxb-1111-2222-faketokensecret"
	AppToken      = "xapp-1-A0FAKE-3333-fakeapptokensecret"
	SigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	TeamID        = "T0FAKETEAM"
	AppID         = "A0FAKEAPP"
	BotUserID     = "U0FAKEBOT"
	BotID         = "B0FAKEBOT"
)

// Message is a message the bot posted, as it stands after its edits.
type Message struct {
	Channel, TS, ThreadTS, Text string
	Blocks                      json.RawMessage
	Edits                       int
	Deleted                     bool
	// File is a file shared by files.completeUploadExternal (FileName
	// its title), Text then its initial comment.
	File     []byte
	FileName string
}

// Failure is an error answer injected for a method's next call.
type Failure struct {
	// Status is the HTTP status (200 when 0, as Slack answers most
	// errors); 429 adds a Retry-After header of RetryAfter seconds.
	Status     int
	Error      string
	RetryAfter int
}

// Server is the fake.
type Server struct {
	*httptest.Server
	// Now is the clock of the deliveries' signatures and the message ts;
	// nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	msgs     []*Message
	nextTS   int64
	calls    map[string]int
	fail     map[string][]Failure
	events   int
	conns    []*websocket.Conn
	opened   int
	acks     map[string]bool
	envelope int
	// files are users' files (AddFile) and uploads (upload v2), by id.
	files   map[string][]byte
	uploads map[string]int // an upload URL's id → the length announced
}

// New starts a fake.
func New() *Server {
	s := &Server{changed: make(chan struct{}), calls: map[string]int{}, fail: map[string][]Failure{}, acks: map[string]bool{},
		files: map[string][]byte{}, uploads: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("GET /files-pri/{id}/download/{name}", s.download)
	mux.HandleFunc("POST /upload/v1/{id}", s.upload)
	mux.HandleFunc("/link/", s.link)
	s.Server = httptest.NewServer(mux)
	return s
}

// APIBase is the fake's Web API base URL (slack.NewClient's base).
func (s *Server) APIBase() string { return s.URL + "/api" }

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// notify wakes waiters; s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait waits, until ctx ends, for cond (called with s.mu held) to hold.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Fail makes the next call of method answer f (calls after it use the
// next injected failure, then succeed).
func (s *Server) Fail(method string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] = append(s.fail[method], f)
}

// Calls counts the calls of method, failed ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Messages returns the bot's messages, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = *m
	}
	return out
}

// WaitMessages waits until the bot has posted at least n messages.
func (s *Server) WaitMessages(ctx context.Context, n int) ([]Message, error) {
	return s.WaitFor(ctx, func(ms []Message) bool { return len(ms) >= n })
}

// WaitFor waits until cond holds of the bot's messages, and returns them.
func (s *Server) WaitFor(ctx context.Context, cond func([]Message) bool) ([]Message, error) {
	var ms []Message
	err := s.wait(ctx, func() bool {
		ms = make([]Message, len(s.msgs))
		for i, m := range s.msgs {
			ms[i] = *m
		}
		return cond(ms)
	})
	return ms, err
}

// reply writes a Web API answer.
func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func slackErr(w http.ResponseWriter, code string) {
	reply(w, http.StatusOK, map[string]any{"ok": false, "error": code})
}

// api serves /api/<method>.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	s.mu.Lock()
	s.calls[method]++
	var f *Failure
	if q := s.fail[method]; len(q) > 0 {
		f, s.fail[method] = &q[0], q[1:]
	}
	s.mu.Unlock()
	if r.Method != http.MethodPost {
		slackErr(w, "invalid_post_type")
		return
	}
	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	switch tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); {
	case !ok || tok == "":
		slackErr(w, "not_authed")
		return
	case tok == BotToken && want == AppToken, tok == AppToken && want == BotToken:
		slackErr(w, "not_allowed_token_type")
		return
	case tok != want:
		slackErr(w, "invalid_auth")
		return
	}
	if f != nil {
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		reply(w, status, map[string]any{"ok": false, "error": f.Error})
		return
	}
	var p map[string]json.RawMessage
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err != nil {
			slackErr(w, "invalid_form_data")
			return
		}
		p = map[string]json.RawMessage{}
		for k, v := range r.PostForm {
			p[k], _ = json.Marshal(v[0])
		}
	} else if r.ContentLength != 0 {
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			slackErr(w, "invalid_form_data")
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			slackErr(w, "invalid_json")
			return
		}
	}
	switch method {
	case "auth.test":
		reply(w, http.StatusOK, map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake Team",
			"user": "claw", "team_id": TeamID, "user_id": BotUserID, "bot_id": BotID, "is_enterprise_install": false})
	case "apps.connections.open":
		s.mu.Lock()
		s.opened++
		n := s.opened
		s.mu.Unlock()
		u := "ws" + strings.TrimPrefix(s.URL, "http") + "/link/?ticket=fake-" + strconv.Itoa(n) + "&app_id=" + AppID
		reply(w, http.StatusOK, map[string]any{"ok": true, "url": u})
	case "chat.postMessage":
		s.post(w, p)
	case "chat.update":
		s.update(w, p)
	case "chat.delete":
		s.delete(w, p)
	case "files.getUploadURLExternal":
		s.uploadURL(w, p)
	case "files.completeUploadExternal":
		s.completeUpload(w, p)
	default:
		slackErr(w, "unknown_method")
	}
}

func str(p map[string]json.RawMessage, k string) string {
	var v string
	json.Unmarshal(p[k], &v)
	return v
}

// check validates a message's text and blocks as Slack does; it returns
// the error code, or "".
func check(p map[string]json.RawMessage) (code string, detail []string) {
	text := str(p, "text")
	if utf8.RuneCountInString(text) > 40000 {
		return "msg_too_long", nil
	}
	raw, has := p["blocks"]
	if !has {
		if text == "" {
			return "no_text", nil
		}
		return "", nil
	}
	var blocks []struct {
		Type    string `json:"type"`
		BlockID string `json:"block_id"`
		Text    *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type string `json:"type"`
			// Text is a text object in a button, a string in a
			// context's text element.
			Text     json.RawMessage `json:"text"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "invalid_blocks_format", nil
	}
	if len(blocks) > 50 {
		return "invalid_blocks", []string{"must provide an array of no more than 50 items [json-pointer:/blocks]"}
	}
	for i, b := range blocks {
		at := fmt.Sprintf(" [json-pointer:/blocks/%d", i)
		switch b.Type {
		case "section":
			if b.Text == nil || (b.Text.Type != "plain_text" && b.Text.Type != "mrkdwn") || b.Text.Text == "" {
				detail = append(detail, "must provide a text object"+at+"/text]")
			} else if utf8.RuneCountInString(b.Text.Text) > 3000 {
				detail = append(detail, "must be less than 3001 characters"+at+"/text/text]")
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				detail = append(detail, "must provide between 1 and 25 elements"+at+"/elements]")
			}
			ids := map[string]bool{}
			for j, e := range b.Elements {
				at := fmt.Sprintf("%s/elements/%d", at, j)
				var label struct{ Type, Text string }
				json.Unmarshal(e.Text, &label)
				switch {
				case e.Type != "button":
					detail = append(detail, "unsupported element type"+at+"/type]")
				case label.Type != "plain_text" || label.Text == "" || utf8.RuneCountInString(label.Text) > 75:
					detail = append(detail, "must provide plain_text of at most 75 characters"+at+"/text]")
				case len(e.Value) > 2000, len(e.ActionID) > 255:
					detail = append(detail, "must be less than 2001 characters"+at+"/value]")
				case e.ActionID != "" && ids[e.ActionID]:
					detail = append(detail, "action_id already exists"+at+"/action_id]")
				}
				ids[e.ActionID] = true
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				detail = append(detail, "must provide between 1 and 10 elements"+at+"/elements]")
			}
			for j, e := range b.Elements {
				var text string
				if (e.Type != "mrkdwn" && e.Type != "plain_text") || json.Unmarshal(e.Text, &text) != nil || text == "" {
					detail = append(detail, fmt.Sprintf("must provide a text element%s/elements/%d]", at, j))
				}
			}
		default:
			detail = append(detail, "unsupported block type"+at+"/type]")
		}
		if len(b.BlockID) > 255 {
			detail = append(detail, "must be less than 256 characters"+at+"/block_id]")
		}
	}
	if detail != nil {
		return "invalid_blocks", detail
	}
	if text == "" && len(blocks) == 0 {
		return "no_text", nil
	}
	return "", nil
}

// find returns the live message ts of channel; s.mu is held.
func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.msgs {
		if m.Channel == channel && m.TS == ts && !m.Deleted {
			return m
		}
	}
	return nil
}

func (s *Server) post(w http.ResponseWriter, p map[string]json.RawMessage) {
	ch := str(p, "channel")
	if ch == "" || !strings.ContainsAny(ch[:1], "CDG") {
		slackErr(w, "channel_not_found")
		return
	}
	if code, detail := check(p); code != "" {
		reply(w, http.StatusOK, map[string]any{"ok": false, "error": code, "errors": detail})
		return
	}
	s.mu.Lock()
	s.nextTS++
	ts := fmt.Sprintf("%d.%06d", s.now().Unix(), s.nextTS)
	m := &Message{Channel: ch, TS: ts, ThreadTS: str(p, "thread_ts"), Text: str(p, "text"), Blocks: p["blocks"]}
	s.msgs = append(s.msgs, m)
	s.notify()
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": ts, "message": wireMessage(*m)})
}

// wireMessage is m as Slack shows it in answers and interactivity
// payloads.
func wireMessage(m Message) map[string]any {
	v := map[string]any{"type": "message", "user": BotUserID, "bot_id": BotID, "app_id": AppID, "text": m.Text, "ts": m.TS, "team": TeamID}
	if m.ThreadTS != "" {
		v["thread_ts"] = m.ThreadTS
	}
	if m.Blocks != nil {
		v["blocks"] = m.Blocks
	}
	return v
}

func (s *Server) update(w http.ResponseWriter, p map[string]json.RawMessage) {
	ch, ts := str(p, "channel"), str(p, "ts")
	if code, detail := check(p); code != "" {
		reply(w, http.StatusOK, map[string]any{"ok": false, "error": code, "errors": detail})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(ch, ts)
	if m == nil {
		slackErr(w, "message_not_found")
		return
	}
	m.Text = str(p, "text")
	if b, ok := p["blocks"]; ok {
		m.Blocks = b
		if string(b) == "[]" {
			m.Blocks = nil
		}
	}
	m.Edits++
	s.notify()
	reply(w, http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": ts, "text": m.Text, "message": wireMessage(*m)})
}

func (s *Server) delete(w http.ResponseWriter, p map[string]json.RawMessage) {
	ch, ts := str(p, "channel"), str(p, "ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(ch, ts)
	if m == nil {
		slackErr(w, "message_not_found")
		return
	}
	m.Deleted = true
	s.notify()
	reply(w, http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": ts})
}

// Event is an Events API callback around the inner event ev, as Slack
// sends it; each has a new event_id.
func (s *Server) Event(ev map[string]any) []byte {
	s.mu.Lock()
	s.events++
	id := fmt.Sprintf("Ev%08d", s.events)
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{
		"token": "unused-verification-token", "team_id": TeamID, "api_app_id": AppID, "event": ev,
		"type": "event_callback", "event_id": id, "event_time": s.now().Unix(),
		"authorizations":        []map[string]any{{"enterprise_id": nil, "team_id": TeamID, "user_id": BotUserID, "is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false, "event_context": "4-fake",
	})
	return b
}

// AddFile keeps data as a file a user shared and returns the file object
// an event carries (files[]), downloadable with the bot token.
func (s *Server) AddFile(name, mimetype string, data []byte) map[string]any {
	s.mu.Lock()
	id := fmt.Sprintf("F%08d", len(s.files)+1)
	s.files[id] = data
	s.mu.Unlock()
	return map[string]any{"id": id, "created": s.now().Unix(), "name": name, "title": name, "mimetype": mimetype,
		"filetype": strings.TrimPrefix(mimetype, "image/"), "user": "U0USER", "size": len(data), "mode": "hosted",
		"url_private":          s.URL + "/files-pri/" + TeamID + "-" + id + "/" + name,
		"url_private_download": s.URL + "/files-pri/" + TeamID + "-" + id + "/download/" + name}
}

// DMFiles is a user's message sharing files in their direct conversation
// with the bot (subtype file_share).
func (s *Server) DMFiles(dm, user, ts, text string, files ...map[string]any) []byte {
	return s.Event(map[string]any{"type": "message", "subtype": "file_share", "channel": dm, "user": user, "text": text, "ts": ts,
		"event_ts": ts, "channel_type": "im", "team": TeamID, "files": files, "upload": false, "display_as_bot": false})
}

// download serves a user's file to the bot token; anyone else gets the
// sign-in page, as Slack answers a request without files:read.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	_, id, _ := strings.Cut(r.PathValue("id"), "-")
	s.mu.Lock()
	data, ok := s.files[id]
	s.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "Bearer "+BotToken:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!DOCTYPE html><title>Slack</title>Sign in to continue")
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	}
}

// uploadURL answers files.getUploadURLExternal: an upload URL for a file
// of the announced length.
func (s *Server) uploadURL(w http.ResponseWriter, p map[string]json.RawMessage) {
	n, err := strconv.Atoi(str(p, "length"))
	if str(p, "filename") == "" || err != nil || n <= 0 {
		slackErr(w, "invalid_arguments")
		return
	}
	s.mu.Lock()
	id := fmt.Sprintf("F%08d", len(s.files)+len(s.uploads)+1)
	s.uploads[id] = n
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"ok": true, "upload_url": s.URL + "/upload/v1/" + id, "file_id": id})
}

// upload takes a file's bytes at its upload URL, which must be as long
// as announced.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<30))
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.uploads[id]; !ok || n != len(data) {
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	s.files[id] = data
	io.WriteString(w, "OK - "+strconv.Itoa(len(data)))
}

// completeUpload answers files.completeUploadExternal: the uploaded
// files are shared in channel_id (and thread_ts), as messages.
func (s *Server) completeUpload(w http.ResponseWriter, p map[string]json.RawMessage) {
	var files []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(str(p, "files")), &files); err != nil || len(files) == 0 {
		slackErr(w, "invalid_arguments")
		return
	}
	s.mu.Lock()
	for _, f := range files {
		if _, ok := s.files[f.ID]; !ok {
			s.mu.Unlock()
			slackErr(w, "file_not_found")
			return
		}
	}
	for _, f := range files {
		s.nextTS++
		s.msgs = append(s.msgs, &Message{Channel: str(p, "channel_id"), ThreadTS: str(p, "thread_ts"), Text: str(p, "initial_comment"),
			TS: fmt.Sprintf("%d.%06d", s.now().Unix(), s.nextTS), File: s.files[f.ID], FileName: f.Title})
	}
	s.mu.Unlock()
	s.notify()
	reply(w, http.StatusOK, map[string]any{"ok": true, "files": files})
}

// DM is a user's message in their direct conversation with the bot
// (message.im), in a thread when thread is not "".
func (s *Server) DM(dm, user, ts, thread, text string) []byte {
	ev := map[string]any{"type": "message", "channel": dm, "user": user, "text": text, "ts": ts, "event_ts": ts, "channel_type": "im", "team": TeamID}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return s.Event(ev)
}

// ChannelMessage is a user's message in a public channel the bot is in
// (message.channels), in a thread when thread is not "".
func (s *Server) ChannelMessage(ch, user, ts, thread, text string) []byte {
	ev := map[string]any{"type": "message", "channel": ch, "user": user, "text": text, "ts": ts, "event_ts": ts, "channel_type": "channel", "team": TeamID}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return s.Event(ev)
}

// Mention is a user's message mentioning the bot in a channel
// (app_mention); the bot's mention leads the text.
func (s *Server) Mention(ch, user, ts, thread, text string) []byte {
	ev := map[string]any{"type": "app_mention", "channel": ch, "user": user, "text": "<@" + BotUserID + "> " + text, "ts": ts, "event_ts": ts, "team": TeamID}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return s.Event(ev)
}

// URLVerification is the challenge Slack sends when the Request URL is
// set.
func URLVerification(challenge string) []byte {
	b, _ := json.Marshal(map[string]string{"token": "unused-verification-token", "challenge": challenge, "type": "url_verification"})
	return b
}

// Press is the block_actions payload of user pressing the button of the
// bot's message m whose value is value; it fails if m has no such
// button.
func (s *Server) Press(m Message, user, value string) ([]byte, error) {
	var blocks []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
			Text     json.RawMessage `json:"text"`
		} `json:"elements"`
	}
	json.Unmarshal(m.Blocks, &blocks)
	for _, b := range blocks {
		for _, e := range b.Elements {
			if b.Type != "actions" || e.Type != "button" || e.Value != value {
				continue
			}
			now := s.now()
			s.mu.Lock()
			s.events++
			n := s.events
			s.mu.Unlock()
			container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false}
			if m.ThreadTS != "" {
				container["thread_ts"] = m.ThreadTS
			}
			return json.Marshal(map[string]any{
				"type":       "block_actions",
				"user":       map[string]any{"id": user, "username": "user-" + user, "name": "user-" + user, "team_id": TeamID},
				"api_app_id": AppID, "token": "unused-verification-token", "container": container,
				"trigger_id": fmt.Sprintf("%d.%d.fake%04d", now.Unix(), 1234, n),
				"team":       map[string]any{"id": TeamID, "domain": "fake"}, "enterprise": nil, "is_enterprise_install": false,
				"channel":      map[string]any{"id": m.Channel, "name": "directmessage"},
				"message":      wireMessage(m),
				"response_url": s.URL + "/actions/" + AppID + "/fake",
				"actions": []map[string]any{{"action_id": e.ActionID, "block_id": b.BlockID, "text": e.Text, "value": e.Value,
					"type": "button", "action_ts": fmt.Sprintf("%d.%06d", now.Unix(), n)}},
				"state": map[string]any{"values": map[string]any{}},
			})
		}
	}
	return nil, fmt.Errorf("fakeslack: message %s has no button %q", m.TS, value)
}

// Deliver posts body to url signed as Slack signs (at the fake's clock),
// with the content type of an event (JSON) or, for an interactivity
// payload (form true), as its form's payload field. retry, when above
// 0, is the X-Slack-Retry-Num of a redelivery.
func (s *Server) Deliver(url string, body []byte, form bool, retry int) (int, error) {
	return s.DeliverSigned(url, body, form, retry, SigningSecret, s.now())
}

// DeliverSigned is Deliver with the signing secret and the timestamp
// given (a forged or replayed delivery).
func (s *Server) DeliverSigned(u string, body []byte, form bool, retry int, secret string, at time.Time) (int, error) {
	ctype := "application/json"
	if form {
		body = []byte(url.Values{"payload": {string(body)}}.Encode())
		ctype = "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set(slack.TimestampHeader, ts)
	req.Header.Set(slack.SignatureHeader, slack.Sign(secret, ts, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// link is the Socket Mode WebSocket endpoint apps.connections.open names.
func (s *Server) link(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Query().Get("ticket"), "fake-") {
		http.Error(w, "bad ticket", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	hello, _ := json.Marshal(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID}})
	if c.Write(ctx, websocket.MessageText, hello) != nil {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.notify()
	s.mu.Unlock()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) == nil && ack.EnvelopeID != "" {
			s.mu.Lock()
			s.acks[ack.EnvelopeID] = true
			s.notify()
			s.mu.Unlock()
		}
	}
}

// WaitConnections waits until the n-th Socket Mode connection was greeted.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return len(s.conns) >= n })
}

// current is the latest Socket Mode connection.
func (s *Server) current() (*websocket.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) == 0 {
		return nil, fmt.Errorf("fakeslack: no socket mode connection")
	}
	return s.conns[len(s.conns)-1], nil
}

// SocketSend sends, over the latest Socket Mode connection, an envelope
// of kind ("events_api" with an event callback, "interactive" with a
// block_actions payload) and returns its envelope_id.
func (s *Server) SocketSend(ctx context.Context, kind string, payload []byte) (string, error) {
	c, err := s.current()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.envelope++
	id := fmt.Sprintf("fake-envelope-%04d", s.envelope)
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"envelope_id": id, "payload": json.RawMessage(payload), "type": kind,
		"accepts_response_payload": false, "retry_attempt": 0, "retry_reason": ""})
	return id, c.Write(ctx, websocket.MessageText, b)
}

// Acked reports whether the envelope id was acknowledged.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[id]
}

// WaitAck waits until the envelope id is acknowledged.
func (s *Server) WaitAck(ctx context.Context, id string) error {
	return s.wait(ctx, func() bool { return s.acks[id] })
}

// Disconnect sends the latest connection Slack's disconnect message
// (reason "refresh_requested" or "warning").
func (s *Server) Disconnect(ctx context.Context, reason string) error {
	c, err := s.current()
	if err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "applink-fake"}})
	return c.Write(ctx, websocket.MessageText, b)
}
