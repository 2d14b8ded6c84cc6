// Package fakediscord is a fake Discord for tests. Its HTTP API (under
// /api/v10) speaks Discord's wire format: the Bot token checked (401
// "401: Unauthorized"), messages with components created, edited and
// deleted in known channels (404 Unknown Channel, 403 Missing Access,
// 400 Invalid Form Body with the field's error), typing, interaction
// follow-ups through the application's webhook (404 Unknown Webhook
// before the interaction is answered, 401 Invalid Webhook Token once the
// token expired), interaction callbacks, GET /applications/@me, GET
// /gateway/bot and the bulk overwrite of global commands; 429 on demand
// with Discord's body and X-RateLimit-* headers. It signs interactions
// with an Ed25519 key of its own and posts them to an Interactions
// endpoint, and serves the Gateway: HELLO, IDENTIFY → READY, RESUME
// (replaying the events after the client's seq) → RESUMED, heartbeats
// acknowledged (and counted), dispatches, op 7 and op 9.
package fakediscord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Token is the bot token the fake accepts.
const Token = "MTA5ODc2NTQzMjEwOTg3NjU0.GfAkE0.fake-discord-bot-token-secret"

// AppID is the fake application's id; BotID its bot user's.
const (
	AppID = "1098765432109876543"
	BotID = "1098765432109876544"
)

// Bot is the application's bot user.
var Bot = map[string]any{"id": BotID, "username": "claw", "global_name": nil, "discriminator": "0", "bot": true}

// Intents the Gateway requires of an IDENTIFY (GUILD_MESSAGES,
// DIRECT_MESSAGES, MESSAGE_CONTENT); a different set is closed with
// 4013/4014 as Discord does.
const Intents = 1<<9 | 1<<12 | 1<<15

// Message is a message the bot posted (in a channel or as a follow-up),
// with its later edits.
type Message struct {
	ID, ChannelID, Content string
	// Token is the interaction token of a follow-up, else "".
	Token string
	// Buttons are the custom_ids of its buttons, Styles their styles.
	Buttons, Labels []string
	Styles          []int
	Edits           int
	Deleted         bool
	// Ephemeral is an interaction's response only its user sees.
	Ephemeral bool
	// Files are its attachments, uploaded with it (multipart).
	Files []File
}

// File is an attachment the bot uploaded.
type File struct {
	Name, ContentType string
	Data              []byte
}

// Channel is a channel the fake knows.
type Channel struct {
	ID, GuildID, ParentID string
	// Type is 0 a guild text channel, 1 a DM, 11 a public thread.
	Type int
	// NoAccess makes posting in it 403 Missing Access.
	NoAccess bool
}

// RateLimit is a 429 to answer instead of the next call of a route.
type RateLimit struct {
	RetryAfter float64
	Global     bool
}

// interaction is an interaction the fake delivered.
type interaction struct {
	id, token, channelID string
	// responded is the callback type it was answered with (0: not yet).
	responded int
	expired   bool
}

// event is a dispatch of the Gateway's session.
type event struct {
	seq  int64
	t    string
	data json.RawMessage
}

// Server is the fake.
type Server struct {
	*httptest.Server
	// Public is the application's public key, Private its key.
	Public  ed25519.PublicKey
	private ed25519.PrivateKey

	mu           sync.Mutex
	nextID       uint64
	channels     map[string]*Channel
	msgs         []*Message
	typing       map[string]int
	interactions map[string]*interaction // by token
	responses    map[string][]int        // callbacks by interaction id
	limits       map[string][]RateLimit  // by route
	calls        map[string]int
	commands     json.RawMessage
	registered   json.RawMessage

	// The Gateway's one session.
	heartbeatInterval int
	conn              *websocket.Conn
	connReady         bool
	session           string
	events            []event
	seq               int64
	heartbeats        int
	missed            int
	identifies        int
	resumes           []int64
	noAck             bool
	changed           chan struct{}
	// attachments are users' files (AddAttachment), by id.
	attachments map[string][]byte
}

// New starts the fake.
func New() *Server {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	s := &Server{
		heartbeatInterval: 41250, Public: pub, private: priv, nextID: 1200000000000000000,
		channels: map[string]*Channel{}, typing: map[string]int{}, interactions: map[string]*interaction{},
		responses: map[string][]int{}, limits: map[string][]RateLimit{}, calls: map[string]int{},
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v10/", s.api)
	mux.HandleFunc("/gateway/", s.gateway)
	mux.HandleFunc("GET /attachments/{channel}/{id}/{name}", s.attachment)
	s.Server = httptest.NewServer(mux)
	return s
}

// APIBase is the base URL of the fake's HTTP API.
func (s *Server) APIBase() string { return s.URL + "/api/v10" }

// PublicKeyHex is the application's public key as the Developer Portal
// shows it.
func (s *Server) PublicKeyHex() string { return hex.EncodeToString(s.Public) }

// Close stops the fake.
func (s *Server) Close() {
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
	s.mu.Unlock()
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// AddChannel makes a channel known.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = &c
}

// RateLimitNext answers the next calls of route (the method and the
// path below /api/v10 with ids and tokens replaced: "POST
// /channels/{id}/messages", "POST /webhooks/{id}/{token}") with 429s, in
// order.
func (s *Server) RateLimitNext(route string, ls ...RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[route] = append(s.limits[route], ls...)
}

// Calls returns how often route was called.
func (s *Server) Calls(route string) int {
	return locked(s, func() int { return s.calls[route] })
}

// Messages returns the messages in channelID that were not deleted, in
// order.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs {
		if m.ChannelID == channelID && !m.Deleted {
			out = append(out, *m)
		}
	}
	return out
}

// Typing returns how often typing was shown in channelID.
func (s *Server) Typing(channelID string) int {
	return locked(s, func() int { return s.typing[channelID] })
}

// Responses returns the callback types an interaction was answered with
// through the API (interactions the Gateway delivered).
func (s *Server) Responses(id string) []int {
	return locked(s, func() []int { return append([]int(nil), s.responses[id]...) })
}

// Commands returns the registered global commands, as the last bulk
// overwrite sent them.
func (s *Server) Commands() json.RawMessage {
	return locked(s, func() json.RawMessage { return s.commands })
}

// ExpireToken makes an interaction's token invalid, as it is 15 minutes
// after the interaction.
func (s *Server) ExpireToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.interactions[token]; it != nil {
		it.expired = true
	}
}

// ID returns a new snowflake.
func (s *Server) ID() string {
	return locked(s, func() string { return s.newID() })
}

func (s *Server) newID() string {
	s.nextID++
	return strconv.FormatUint(s.nextID, 10)
}

// Wait calls cond until it holds or d passes (then it returns false);
// cond is called again whenever the fake's state changes.
func (s *Server) Wait(d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		case <-deadline.C:
			return cond()
		}
	}
}

// locked returns f's result, read under the fake's lock.
func locked[T any](s *Server, f func() T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f()
}

// notify wakes Wait; call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// apiError writes Discord's JSON error.
func apiError(w http.ResponseWriter, status, code int, message string, extra map[string]any) {
	body := map[string]any{"message": message, "code": code}
	for k, v := range extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// route is a request's method and path with its ids and tokens replaced
// by their names, and those values.
func route(method, path string) (string, []string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var vals []string
	for i, p := range parts {
		switch {
		case i > 0 && (parts[i-1] == "channels" || parts[i-1] == "messages" || parts[i-1] == "interactions" || parts[i-1] == "applications" && p != "@me"):
			vals = append(vals, p)
			parts[i] = "{id}"
		case i > 0 && parts[i-1] == "webhooks":
			vals = append(vals, p)
			parts[i] = "{id}"
		case i > 1 && (parts[i-2] == "webhooks" || parts[i-2] == "interactions"):
			vals = append(vals, p)
			parts[i] = "{token}"
		}
	}
	return method + " /" + strings.Join(parts, "/"), vals
}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	rt, vals := route(r.Method, path)
	var body []byte
	var files []File
	var err error
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
			apiError(w, 400, 50109, "The request body contains invalid JSON.", nil)
			return
		}
	} else {
		if body, files, err = multipartMessage(r); err != nil {
			apiError(w, 400, 50035, "Invalid Form Body: "+err.Error(), nil)
			return
		}
		for _, f := range files {
			if len(f.Data) > maxAttachment {
				apiError(w, 413, 40005, "Request entity too large", nil)
				return
			}
		}
	}
	// Webhook and interaction routes are authorized by their token.
	if !strings.HasPrefix(path, "/webhooks/") && !strings.HasPrefix(path, "/interactions/") && r.Header.Get("Authorization") != "Bot "+Token {
		apiError(w, 401, 0, "401: Unauthorized", nil)
		return
	}
	s.mu.Lock()
	s.calls[rt]++
	if ls := s.limits[rt]; len(ls) > 0 {
		s.limits[rt] = ls[1:]
		s.notify()
		s.mu.Unlock()
		l := ls[0]
		scope := "user"
		if l.Global {
			scope = "global"
			w.Header().Set("X-RateLimit-Global", "true")
		} else {
			w.Header().Set("X-RateLimit-Limit", "5")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().UnixMilli())/1000+l.RetryAfter, 'f', 3, 64))
			w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(l.RetryAfter, 'f', 3, 64))
			w.Header().Set("X-RateLimit-Bucket", "abcd1234")
		}
		w.Header().Set("X-RateLimit-Scope", scope)
		w.Header().Set("Retry-After", strconv.Itoa(int(l.RetryAfter+0.999)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(map[string]any{"message": "You are being rate limited.", "retry_after": l.RetryAfter, "global": l.Global})
		return
	}
	s.notify()
	s.mu.Unlock()
	var in map[string]any
	if len(body) > 0 && json.Unmarshal(body, &in) != nil && rt != "PUT /applications/{id}/commands" {
		apiError(w, 400, 50109, "The request body contains invalid JSON.", nil)
		return
	}
	switch rt {
	case "GET /applications/@me":
		writeJSON(w, 200, map[string]any{"id": AppID, "name": "Claw", "verify_key": s.PublicKeyHex(), "bot": Bot, "flags": 0, "bot_public": true})
	case "GET /gateway/bot":
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway", "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}})
	case "GET /channels/{id}":
		s.getChannel(w, vals[0])
	case "POST /channels/{id}/messages":
		s.createMessage(w, vals[0], "", in, files)
	case "PATCH /channels/{id}/messages/{id}", "DELETE /channels/{id}/messages/{id}":
		s.changeMessage(w, r.Method, vals[0], "", vals[1], in)
	case "POST /channels/{id}/typing":
		s.mu.Lock()
		c := s.channels[vals[0]]
		if c != nil {
			s.typing[c.ID]++
		}
		s.mu.Unlock()
		if c == nil {
			apiError(w, 404, 10003, "Unknown Channel", nil)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "POST /webhooks/{id}/{token}":
		s.followUp(w, r, vals, in, files)
	case "PATCH /webhooks/{id}/{token}/messages/{id}", "DELETE /webhooks/{id}/{token}/messages/{id}":
		it, ok := s.webhookInteraction(w, vals)
		if ok {
			s.changeMessage(w, r.Method, it.channelID, it.token, vals[2], in)
		}
	case "POST /interactions/{id}/{token}/callback":
		s.callback(w, vals, in)
	case "PUT /applications/{id}/commands":
		s.putCommands(w, vals[0], body)
	case "GET /applications/{id}/commands":
		s.mu.Lock()
		cmds := s.registered
		s.mu.Unlock()
		if vals[0] != AppID {
			apiError(w, 403, 50001, "Missing Access", nil)
			return
		}
		if cmds == nil {
			cmds = json.RawMessage("[]")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(cmds)
	default:
		apiError(w, 404, 0, "404: Not Found", nil)
	}
}

func (s *Server) getChannel(w http.ResponseWriter, id string) {
	s.mu.Lock()
	c := s.channels[id]
	s.mu.Unlock()
	if c == nil {
		apiError(w, 404, 10003, "Unknown Channel", nil)
		return
	}
	ch := map[string]any{"id": c.ID, "type": c.Type}
	if c.GuildID != "" {
		ch["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		ch["parent_id"] = c.ParentID
	}
	writeJSON(w, 200, ch)
}

// formError is 400 Invalid Form Body with one field's error, as Discord
// reports it.
func formError(w http.ResponseWriter, field, code, message string) {
	errs := map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	for _, f := range slicesReverse(strings.Split(field, ".")) {
		errs = map[string]any{f: errs}
	}
	apiError(w, 400, 50035, "Invalid Form Body", map[string]any{"errors": errs})
}

func slicesReverse(s []string) []string {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// parseMessage checks a message body: content within 2,000 characters,
// not empty unless it has components, allowed_mentions an object, and
// components an action row of at most five buttons, each with a style
// of 1 to 4, a label and a custom_id of at most 100 characters.
func parseMessage(w http.ResponseWriter, in map[string]any, edit bool) (content string, m *Message, ok bool) {
	content, _ = in["content"].(string)
	if utf8.RuneCountInString(content) > 2000 {
		formError(w, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
		return "", nil, false
	}
	if am, has := in["allowed_mentions"]; has {
		if _, isObj := am.(map[string]any); !isObj {
			formError(w, "allowed_mentions", "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")
			return "", nil, false
		}
	}
	m = &Message{Content: content}
	comps, _ := in["components"].([]any)
	if len(comps) > 5 {
		formError(w, "components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
		return "", nil, false
	}
	for i, c := range comps {
		row, _ := c.(map[string]any)
		if row["type"] != float64(1) {
			formError(w, fmt.Sprintf("components.%d.type", i), "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,).")
			return "", nil, false
		}
		buttons, _ := row["components"].([]any)
		if len(buttons) == 0 || len(buttons) > 5 {
			formError(w, fmt.Sprintf("components.%d.components", i), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
			return "", nil, false
		}
		for j, b := range buttons {
			btn, _ := b.(map[string]any)
			at := fmt.Sprintf("components.%d.components.%d", i, j)
			id, _ := btn["custom_id"].(string)
			label, _ := btn["label"].(string)
			style, _ := btn["style"].(float64)
			switch {
			case btn["type"] != float64(2):
				formError(w, at+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (2, 3, 5, 6, 7, 8).")
			case style < 1 || style > 4:
				formError(w, at+".style", "BUTTON_COMPONENT_INVALID_STYLE", "Invalid button style")
			case id == "" || utf8.RuneCountInString(id) > 100:
				formError(w, at+".custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
			case utf8.RuneCountInString(label) > 80:
				formError(w, at+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
			default:
				m.Buttons, m.Labels, m.Styles = append(m.Buttons, id), append(m.Labels, label), append(m.Styles, int(style))
				continue
			}
			return "", nil, false
		}
	}
	if content == "" && len(m.Buttons) == 0 && !edit {
		apiError(w, 400, 50006, "Cannot send an empty message", nil)
		return "", nil, false
	}
	return content, m, true
}

func (s *Server) createMessage(w http.ResponseWriter, channelID, token string, in map[string]any, files []File) {
	if len(files) > 0 && in["content"] == nil {
		in["content"] = ""
	}
	_, m, ok := parseMessage(w, in, len(files) > 0)
	if !ok {
		return
	}
	m.Files = files
	s.mu.Lock()
	c := s.channels[channelID]
	switch {
	case c == nil:
		s.mu.Unlock()
		apiError(w, 404, 10003, "Unknown Channel", nil)
		return
	case c.NoAccess && token == "":
		s.mu.Unlock()
		apiError(w, 403, 50001, "Missing Access", nil)
		return
	}
	m.ID, m.ChannelID, m.Token = s.newID(), channelID, token
	s.msgs = append(s.msgs, m)
	s.notify()
	s.mu.Unlock()
	writeJSON(w, 200, s.messageJSON(m))
}

func (s *Server) messageJSON(m *Message) map[string]any {
	out := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "author": Bot, "type": 0,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "tts": false, "mentions": []any{}, "attachments": []any{}, "embeds": []any{}}
	if m.Token != "" {
		out["webhook_id"] = AppID
		out["application_id"] = AppID
	}
	return out
}

func (s *Server) changeMessage(w http.ResponseWriter, method, channelID, token, id string, in map[string]any) {
	var m *Message
	s.mu.Lock()
	for _, x := range s.msgs {
		// A webhook's routes reach its own messages only.
		if x.ID == id && x.ChannelID == channelID && !x.Deleted && (token == "" || x.Token == token) {
			m = x
		}
	}
	s.mu.Unlock()
	if m == nil {
		apiError(w, 404, 10008, "Unknown Message", nil)
		return
	}
	if method == http.MethodDelete {
		s.mu.Lock()
		m.Deleted = true
		s.notify()
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	content, _, ok := parseMessage(w, in, true)
	if !ok {
		return
	}
	s.mu.Lock()
	m.Content = content
	m.Edits++
	s.notify()
	s.mu.Unlock()
	writeJSON(w, 200, s.messageJSON(m))
}

// webhookInteraction finds the interaction of a webhook route: 404
// Unknown Webhook for another application or a token the fake never
// gave (or whose interaction is not answered yet), 401 Invalid Webhook
// Token once it expired.
func (s *Server) webhookInteraction(w http.ResponseWriter, vals []string) (*interaction, bool) {
	s.mu.Lock()
	it := s.interactions[vals[1]]
	s.mu.Unlock()
	switch {
	case vals[0] != AppID || it == nil || it.responded == 0:
		apiError(w, 404, 10015, "Unknown Webhook", nil)
		return nil, false
	case it.expired:
		apiError(w, 401, 50027, "Invalid Webhook Token", nil)
		return nil, false
	}
	return it, true
}

func (s *Server) followUp(w http.ResponseWriter, r *http.Request, vals []string, in map[string]any, files []File) {
	it, ok := s.webhookInteraction(w, vals)
	if !ok {
		return
	}
	if r.URL.Query().Get("wait") != "true" {
		// Without wait Discord answers 204 and no message id.
		_, m, ok := parseMessage(w, in, false)
		if !ok {
			return
		}
		s.mu.Lock()
		m.ID, m.ChannelID, m.Token, m.Files = s.newID(), it.channelID, it.token, files
		s.msgs = append(s.msgs, m)
		s.notify()
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.createMessage(w, it.channelID, it.token, in, files)
}

func (s *Server) callback(w http.ResponseWriter, vals []string, in map[string]any) {
	s.mu.Lock()
	it := s.interactions[vals[1]]
	s.mu.Unlock()
	if it == nil || it.id != vals[0] {
		apiError(w, 404, 10062, "Unknown interaction", nil)
		return
	}
	typ, _ := in["type"].(float64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if it.responded != 0 {
		apiError(w, 400, 40060, "Interaction has already been acknowledged.", nil)
		return
	}
	if typ == callbackMessage {
		data, _ := in["data"].(map[string]any)
		_, m, ok := parseMessage(w, data, false)
		if !ok {
			return
		}
		s.original(it, m, data)
	}
	it.responded = int(typ)
	s.responses[it.id] = append(s.responses[it.id], int(typ))
	s.notify()
	w.WriteHeader(http.StatusNoContent)
}

// callbackMessage is the response type of a message
// (CHANNEL_MESSAGE_WITH_SOURCE).
const callbackMessage = 4

// original records m, an interaction's message response with its data,
// as the interaction's message in its channel; s.mu is held.
func (s *Server) original(it *interaction, m *Message, data map[string]any) {
	flags, _ := data["flags"].(float64)
	m.ID, m.ChannelID, m.Token, m.Ephemeral = s.newID(), it.channelID, it.token, int(flags)&(1<<6) != 0
	s.msgs = append(s.msgs, m)
}

func (s *Server) putCommands(w http.ResponseWriter, app string, body []byte) {
	if app != AppID {
		apiError(w, 403, 50001, "Missing Access", nil)
		return
	}
	var cmds []map[string]any
	if err := json.Unmarshal(body, &cmds); err != nil {
		apiError(w, 400, 50035, "Invalid Form Body", nil)
		return
	}
	for i, c := range cmds {
		name, _ := c["name"].(string)
		desc, _ := c["description"].(string)
		if name == "" || len(name) > 32 || strings.ToLower(name) != name {
			formError(w, fmt.Sprintf("%d.name", i), "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
			return
		}
		if desc == "" || len(desc) > 100 {
			formError(w, fmt.Sprintf("%d.description", i), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
			return
		}
		c["id"], c["application_id"], c["version"] = s.ID(), AppID, s.ID()
	}
	out, _ := json.Marshal(cmds)
	s.mu.Lock()
	s.commands, s.registered = body, out
	s.notify()
	s.mu.Unlock()
	writeJSON(w, 200, cmds)
}

// Interaction is an interaction to deliver.
type Interaction map[string]any

// SlashCommand is an application command interaction: /name with the
// text option for /ask, from user in channelID of guildID ("" for the
// bot's DM with the user).
func (s *Server) SlashCommand(guildID, channelID, userID, name, text string) Interaction {
	data := map[string]any{"id": s.ID(), "name": name, "type": 1}
	if name == "ask" {
		data["options"] = []any{map[string]any{"name": "text", "type": 3, "value": text}}
	}
	return s.newInteraction(2, guildID, channelID, userID, data, nil)
}

// ButtonPress is a pressed button (custom_id) on the bot's message.
func (s *Server) ButtonPress(guildID, channelID, userID, messageID, customID string) Interaction {
	return s.newInteraction(3, guildID, channelID, userID, map[string]any{"custom_id": customID, "component_type": 2},
		map[string]any{"id": messageID, "channel_id": channelID, "author": Bot, "content": "", "type": 0})
}

// Ping is Discord's check of the endpoint.
func (s *Server) Ping() Interaction {
	return Interaction{"id": s.ID(), "application_id": AppID, "type": 1, "token": "ping-" + s.ID(), "version": 1}
}

func (s *Server) newInteraction(typ int, guildID, channelID, userID string, data, message map[string]any) Interaction {
	id := s.ID()
	it := Interaction{"id": id, "application_id": AppID, "type": typ, "data": data, "token": "aW50ZXJhY3Rpb246" + id + ":tokenpart", "version": 1,
		"channel_id": channelID, "app_permissions": "442368", "locale": "en-US", "entitlements": []any{}, "authorizing_integration_owners": map[string]any{}}
	user := map[string]any{"id": userID, "username": "user" + userID[len(userID)-3:], "global_name": "User " + userID[len(userID)-3:], "discriminator": "0"}
	s.mu.Lock()
	c := s.channels[channelID]
	s.mu.Unlock()
	ch := map[string]any{"id": channelID, "type": 1}
	if c != nil {
		ch["type"] = c.Type
		if c.ParentID != "" {
			ch["parent_id"] = c.ParentID
		}
		if c.GuildID != "" {
			ch["guild_id"] = c.GuildID
		}
	}
	it["channel"] = ch
	if guildID != "" {
		it["guild_id"] = guildID
		it["guild_locale"] = "en-US"
		it["member"] = map[string]any{"user": user, "roles": []any{}, "joined_at": "2024-01-01T00:00:00+00:00", "permissions": "2248473465835073", "deaf": false, "mute": false, "flags": 0}
		it["context"] = 0
	} else {
		it["user"] = user
		it["context"] = 1
	}
	if message != nil {
		it["message"] = message
	}
	return it
}

// ID returns the interaction's id; Token its token.
func (it Interaction) ID() string    { return it["id"].(string) }
func (it Interaction) Token() string { return it["token"].(string) }

// Register makes the fake know an interaction (one it dispatches over the
// Gateway; Deliver registers its own), so that its callback and, once it
// is answered, its follow-ups are accepted.
func (s *Server) Register(it Interaction) { s.register(it) }

func (s *Server) register(it Interaction) *interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := it.Token()
	if x := s.interactions[tok]; x != nil {
		return x
	}
	ch, _ := it["channel_id"].(string)
	x := &interaction{id: it.ID(), token: tok, channelID: ch}
	s.interactions[tok] = x
	return x
}

// Sign returns the signature headers' values of body, signed at ts.
func (s *Server) Sign(body []byte, ts time.Time) (sig, timestamp string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return hex.EncodeToString(ed25519.Sign(s.private, append([]byte(timestamp), body...))), timestamp
}

// Response is an Interactions endpoint's answer.
type Response struct {
	Status int
	Type   int
	Body   string
}

// Deliver posts it to url as Discord does, signed now, and records the
// answer; a deferred answer lets the interaction's follow-ups in.
func (s *Server) Deliver(url string, it Interaction) (Response, error) {
	body, err := json.Marshal(it)
	if err != nil {
		return Response{}, err
	}
	sig, ts := s.Sign(body, time.Now())
	return s.Post(url, it, body, sig, ts)
}

// Post posts body (it, as JSON) to url with the signature headers given,
// which may be forged, and records a successful answer.
func (s *Server) Post(url string, it Interaction, body []byte, sig, ts string) (Response, error) {
	x := s.register(it)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Discord-Interactions/1.0 (+https://discord.com)")
	if sig != "" {
		req.Header.Set("X-Signature-Ed25519", sig)
	}
	if ts != "" {
		req.Header.Set("X-Signature-Timestamp", ts)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	out := Response{Status: resp.StatusCode, Body: string(raw)}
	var cb struct {
		Type int            `json:"type"`
		Data map[string]any `json:"data"`
	}
	if resp.StatusCode == 200 && json.Unmarshal(raw, &cb) == nil {
		out.Type = cb.Type
		var m *Message
		if cb.Type == callbackMessage {
			// Discord refuses a response it cannot show ("This
			// interaction failed"); the fake records what it can.
			var ok bool
			if _, m, ok = parseMessage(httptest.NewRecorder(), cb.Data, false); !ok {
				return out, fmt.Errorf("fakediscord: the message response is not a message Discord takes: %s", raw)
			}
		}
		s.mu.Lock()
		if x.responded == 0 {
			x.responded = cb.Type
			if m != nil {
				s.original(x, m, cb.Data)
			}
		}
		s.notify()
		s.mu.Unlock()
	}
	return out, nil
}

// Gateway

// gatewayIn is what a client sends over the Gateway.
type gatewayIn struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("v") != "10" || r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "v=10&encoding=json expected", http.StatusBadRequest)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
	s.conn, s.connReady = conn, false
	interval := s.heartbeatInterval
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.conn == conn {
			s.conn, s.connReady = nil, false
		}
		s.notify()
		s.mu.Unlock()
	}()
	if s.send(ctx, conn, map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": interval}, "s": nil, "t": nil}) != nil {
		return
	}
	// A client that sends no heartbeat for twice the interval is
	// dropped, as Discord drops it.
	watchdog := time.AfterFunc(2*time.Duration(interval)*time.Millisecond, func() {
		s.mu.Lock()
		s.missed++
		s.notify()
		s.mu.Unlock()
		conn.CloseNow()
	})
	defer watchdog.Stop()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var p gatewayIn
		if json.Unmarshal(b, &p) != nil {
			conn.Close(4002, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case 1:
			watchdog.Reset(2 * time.Duration(interval) * time.Millisecond)
			s.mu.Lock()
			s.heartbeats++
			ack := !s.noAck
			s.notify()
			s.mu.Unlock()
			if ack && s.send(ctx, conn, map[string]any{"op": 11}) != nil {
				return
			}
		case 2:
			if !s.identify(ctx, conn, p.D) {
				return
			}
		case 6:
			if !s.resume(ctx, conn, p.D) {
				return
			}
		default:
			conn.Close(4001, "Unknown opcode.")
			return
		}
	}
}

func (s *Server) identify(ctx context.Context, conn *websocket.Conn, d json.RawMessage) bool {
	var id struct {
		Token      string            `json:"token"`
		Intents    int               `json:"intents"`
		Properties map[string]string `json:"properties"`
	}
	json.Unmarshal(d, &id)
	switch {
	case id.Token != Token:
		conn.Close(4004, "Authentication failed.")
		return false
	case id.Intents&^Intents != 0 || id.Intents == 0:
		conn.Close(4013, "Invalid intent(s).")
		return false
	case id.Intents != Intents:
		conn.Close(4014, "Disallowed intent(s).")
		return false
	case id.Properties["os"] == "" || id.Properties["browser"] == "":
		conn.Close(4002, "Error while decoding payload.")
		return false
	}
	s.mu.Lock()
	s.identifies++
	s.session = fmt.Sprintf("%032x", s.nextID)
	s.nextID++
	s.events, s.seq = nil, 0
	s.seq++
	s.events = append(s.events, event{seq: s.seq, t: "READY"})
	ready := map[string]any{"op": 0, "s": s.seq, "t": "READY", "d": map[string]any{
		"v": 10, "user": Bot, "guilds": []any{}, "session_id": s.session,
		"resume_gateway_url": "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway",
		"application":        map[string]any{"id": AppID, "flags": 0},
	}}
	s.mu.Unlock()
	if s.send(ctx, conn, ready) != nil {
		return false
	}
	s.markReady(conn)
	return true
}

func (s *Server) resume(ctx context.Context, conn *websocket.Conn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	json.Unmarshal(d, &rs)
	if rs.Token != Token {
		conn.Close(4004, "Authentication failed.")
		return false
	}
	s.mu.Lock()
	s.resumes = append(s.resumes, rs.Seq)
	if rs.SessionID == "" || rs.SessionID != s.session {
		s.notify()
		s.mu.Unlock()
		return s.send(ctx, conn, map[string]any{"op": 9, "d": false}) == nil
	}
	if rs.Seq > s.seq {
		s.mu.Unlock()
		conn.Close(4007, "Invalid seq.")
		return false
	}
	var replay []event
	for _, e := range s.events {
		if e.seq > rs.Seq && e.t != "READY" {
			replay = append(replay, e)
		}
	}
	s.seq++
	resumed := event{seq: s.seq, t: "RESUMED", data: json.RawMessage(`{}`)}
	s.mu.Unlock()
	for _, e := range append(replay, resumed) {
		if s.send(ctx, conn, map[string]any{"op": 0, "s": e.seq, "t": e.t, "d": e.data}) != nil {
			return false
		}
	}
	s.markReady(conn)
	return true
}

// markReady records that conn identified or resumed: dispatches go to it.
func (s *Server) markReady(conn *websocket.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == conn {
		s.connReady = true
	}
	s.notify()
}

func (s *Server) send(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}

// Connected reports whether a Gateway client is identified or resumed.
func (s *Server) Connected() bool {
	return locked(s, func() bool { return s.conn != nil && s.connReady })
}

// Heartbeats returns the heartbeats received; Identifies the IDENTIFYs.
func (s *Server) Heartbeats() int {
	return locked(s, func() int { return s.heartbeats })
}

// Missed returns how many connections were dropped for want of a
// heartbeat.
func (s *Server) Missed() int {
	return locked(s, func() int { return s.missed })
}

// Identifies returns how many times a client identified.
func (s *Server) Identifies() int {
	return locked(s, func() int { return s.identifies })
}

// Resumes returns the seq of each RESUME received.
func (s *Server) Resumes() []int64 {
	return locked(s, func() []int64 { return append([]int64(nil), s.resumes...) })
}

// Seq is the session's last sequence number.
func (s *Server) Seq() int64 {
	return locked(s, func() int64 { return s.seq })
}

// SetHeartbeatInterval sets the interval the next HELLOs announce (in
// milliseconds; Discord's is 41,250).
func (s *Server) SetHeartbeatInterval(ms int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeatInterval = ms
}

// NoAck stops (or resumes) acknowledging heartbeats, as a dead
// connection does.
func (s *Server) NoAck(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAck = on
}

// Dispatch sends an event of the session to the connected client (or
// keeps it for a RESUME when none is connected) and returns its seq.
func (s *Server) Dispatch(t string, d any) (int64, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.seq++
	e := event{seq: s.seq, t: t, data: b}
	s.events = append(s.events, e)
	conn, ready := s.conn, s.connReady
	s.mu.Unlock()
	if conn == nil || !ready {
		return e.seq, nil
	}
	return e.seq, s.send(context.Background(), conn, map[string]any{"op": 0, "s": e.seq, "t": e.t, "d": e.data})
}

// Op sends a bare opcode: 7 (reconnect), 9 (invalid session, with d the
// resumable flag) or 1 (a heartbeat request).
func (s *Server) Op(op int, d any) error {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("fakediscord: no gateway client")
	}
	return s.send(context.Background(), conn, map[string]any{"op": op, "d": d})
}

// Drop closes the Gateway connection as a network failure would.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
}

// maxAttachment is the largest file a bot uploads (10 MiB).
const maxAttachment = 10 << 20

// multipartMessage reads a message sent as multipart/form-data: its
// payload_json, and the files[n] parts, each of which the payload's
// attachments must name by its index.
func multipartMessage(r *http.Request) (payload []byte, files []File, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, err
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(io.LimitReader(p, maxAttachment+1))
		if err != nil {
			return nil, nil, err
		}
		switch name := p.FormName(); {
		case name == "payload_json":
			payload = data
		case strings.HasPrefix(name, "files[") && p.FileName() != "":
			files = append(files, File{Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
		default:
			return nil, nil, fmt.Errorf("unexpected part %q", name)
		}
	}
	var meta struct {
		Attachments []struct {
			ID       json.Number `json:"id"`
			Filename string      `json:"filename"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(payload, &meta); err != nil {
		return nil, nil, fmt.Errorf("payload_json: %w", err)
	}
	if len(meta.Attachments) != len(files) {
		return nil, nil, fmt.Errorf("attachments: %d named, %d files", len(meta.Attachments), len(files))
	}
	return payload, files, nil
}

// AddAttachment keeps data as a file a user attached and returns its
// attachment object, with a signed CDN URL the fake serves.
func (s *Server) AddAttachment(channelID, filename, contentType string, data []byte) map[string]any {
	id := s.ID()
	s.mu.Lock()
	if s.attachments == nil {
		s.attachments = map[string][]byte{}
	}
	s.attachments[id] = data
	s.mu.Unlock()
	return map[string]any{"id": id, "filename": filename, "content_type": contentType, "size": len(data),
		"url":       s.URL + "/attachments/" + channelID + "/" + id + "/" + filename + "?ex=68000000&is=67f00000&hm=" + attachmentSig(id),
		"proxy_url": s.URL + "/attachments/" + channelID + "/" + id + "/" + filename}
}

func attachmentSig(id string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte("fake-cdn/"+id))) }

// attachment serves a user's attachment at its signed URL; without the
// signature the CDN answers 404.
func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	data, ok := s.attachments[id]
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("hm") != attachmentSig(id) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

// MessageCreate is a MESSAGE_CREATE event of a user's message in
// channelID (of guildID, "" for a DM), mentioning the users given.
func (s *Server) MessageCreate(guildID, channelID, userID, content string, mentions ...string) map[string]any {
	ms := []any{}
	for _, m := range mentions {
		if m == BotID {
			ms = append(ms, Bot)
		} else {
			ms = append(ms, map[string]any{"id": m, "username": "u" + m, "discriminator": "0"})
		}
	}
	m := map[string]any{
		"id": s.ID(), "channel_id": channelID, "type": 0, "content": content, "tts": false,
		"timestamp":   time.Now().UTC().Format("2006-01-02T15:04:05.000000-07:00"),
		"author":      map[string]any{"id": userID, "username": "user" + userID, "global_name": nil, "discriminator": "0"},
		"mentions":    ms,
		"attachments": []any{}, "embeds": []any{}, "pinned": false, "mention_everyone": false, "mention_roles": []any{}, "flags": 0,
	}
	if guildID != "" {
		m["guild_id"] = guildID
		m["member"] = map[string]any{"roles": []any{}, "joined_at": "2024-01-01T00:00:00+00:00", "deaf": false, "mute": false, "flags": 0}
	}
	return m
}
