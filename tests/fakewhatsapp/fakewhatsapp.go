// Package fakewhatsapp is a fake of the WhatsApp Business Cloud API for
// tests: the Graph API's POST /<phone number id>/messages (text, reply
// buttons, templates, to users and to a group of the Groups API, checked
// as the API checks them) and GET /<phone
// number id>, the bearer token and the phone number id checked, the
// Graph error bodies (a bad token, 190; a rate limit, 130429; the closed
// customer service window, 131047, also refused by the fake's own record
// of when each user last wrote), and the webhook side: notifications of
// users' messages and button presses, signed with the app secret as Meta
// signs them, and the verification request.
package fakewhatsapp

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The fake's account.
const (
	Version            = "v21.0"
	Token              = "EAAfake0access0token0of0a0system0user"
	PhoneNumberID      = "106540352242922"
	DisplayPhoneNumber = "15550783881"
	AccountID          = "102290129340398"
	AppSecret          = "fake-app-secret-0123456789abcdef"
	VerifyToken        = "fake-verify-token"
	// GroupID is the group (of the Groups API) the business number is in.
	GroupID = "Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD"
)

// Button is a reply button of a sent message.
type Button struct{ ID, Title string }

// Sent is a message the business sent.
type Sent struct {
	// To is a user's wa_id, or GroupID for the group.
	ID, To, Type string
	// Text is the text's or the interactive message's body.
	Text    string
	Buttons []Button
	// Template and Language name a template message.
	Template, Language string
	// Media is an image's or a document's bytes (uploaded to /media),
	// Filename a document's name; Text is then the caption.
	Media    []byte
	Filename string
}

// Failure is an error answer: the HTTP status and the Graph error.
type Failure struct {
	Status  int
	Code    int
	Type    string
	Message string
	Details string
}

// Failures as the Cloud API answers them.
var (
	BadToken     = Failure{Status: 401, Code: 190, Type: "OAuthException", Message: "Invalid OAuth access token - Cannot parse access token"}
	RateLimit    = Failure{Status: 400, Code: 130429, Type: "OAuthException", Message: "(#130429) Rate limit hit", Details: "Cloud API message throughput has been reached."}
	WindowClosed = Failure{Status: 400, Code: 131047, Type: "OAuthException", Message: "(#131047) Re-engagement message", Details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}
)

// Server is the fake.
type Server struct {
	*httptest.Server

	mu     sync.Mutex
	now    func() time.Time
	seq    int
	sent   []Sent
	fail   []Failure
	lastIn map[string]time.Time
	posts  int
	// media are uploads and users' files, by media id.
	media map[string]medium
}

// medium is a stored media file.
type medium struct {
	mimeType string
	data     []byte
}

// New starts a fake server.
func New() *Server {
	s := &Server{now: time.Now, lastIn: map[string]time.Time{}, media: map[string]medium{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// APIBase is the Graph API base of the fake, with its version.
func (s *Server) APIBase() string { return s.URL + "/" + Version }

// SetNow sets the fake's clock (of the window and the timestamps).
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// FailNext makes the next POSTs of messages answer fs, in order.
func (s *Server) FailNext(fs ...Failure) {
	s.mu.Lock()
	s.fail = append(s.fail, fs...)
	s.mu.Unlock()
}

// Sent returns the messages sent to the user to, in order.
func (s *Server) Sent(to string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.sent {
		if m.To == to {
			out = append(out, m)
		}
	}
	return out
}

// Posts returns how many POSTs of messages the fake answered, refused
// ones included.
func (s *Server) Posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts
}

func (s *Server) nextID() string {
	s.seq++
	return fmt.Sprintf("wamid.HBgLMTU1NTAxMjM0NTYVAgASGBQz%08dQA==", s.seq)
}

func writeError(w http.ResponseWriter, f Failure) {
	e := map[string]any{"message": f.Message, "type": f.Type, "code": f.Code, "fbtrace_id": "AbCdEfGhIjKlMnOpQrStUv"}
	if f.Details != "" {
		e["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": f.Details}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func invalid(w http.ResponseWriter, details string) {
	writeError(w, Failure{Status: 400, Code: 100, Type: "OAuthException", Message: "(#100) Invalid parameter", Details: details})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+Version+"/")
	id, edge, _ := strings.Cut(rest, "/")
	if !ok || id == "" {
		writeError(w, Failure{Status: 400, Code: 2500, Type: "OAuthException", Message: "Unknown path components: " + r.URL.Path})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+Token {
		writeError(w, BadToken)
		return
	}
	if id == "whatsapp_business" && edge == "attachments/" {
		s.download(w, r.URL.Query().Get("mid"))
		return
	}
	s.mu.Lock()
	m, isMedia := s.media[id]
	s.mu.Unlock()
	if isMedia && r.Method == http.MethodGet && edge == "" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"messaging_product": "whatsapp", "id": id, "mime_type": m.mimeType,
			"sha256": fmt.Sprintf("%x", sha256.Sum256(m.data)), "file_size": len(m.data),
			"url": s.URL + "/" + Version + "/whatsapp_business/attachments/?mid=" + id + "&ext=1750000000&hash=ATfake"})
		return
	}
	if id != PhoneNumberID {
		writeError(w, Failure{Status: 400, Code: 100, Type: "GraphMethodException",
			Message: fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api", strings.ToLower(r.Method), id)})
		return
	}
	switch {
	case r.Method == http.MethodGet && edge == "":
		s.phoneNumber(w, r)
	case r.Method == http.MethodPost && edge == "messages":
		s.messages(w, r)
	case r.Method == http.MethodPost && edge == "media":
		s.upload(w, r)
	default:
		writeError(w, Failure{Status: 400, Code: 100, Type: "GraphMethodException", Message: "Unsupported " + strings.ToLower(r.Method) + " request."})
	}
}

func (s *Server) phoneNumber(w http.ResponseWriter, r *http.Request) {
	all := map[string]any{"id": PhoneNumberID, "display_phone_number": "+1 555-078-3881", "verified_name": "Lambdaclaw Test",
		"code_verification_status": "NOT_VERIFIED", "quality_rating": "GREEN", "platform_type": "CLOUD_API", "throughput": map[string]any{"level": "STANDARD"}}
	out := all
	if f := r.URL.Query().Get("fields"); f != "" {
		out = map[string]any{"id": PhoneNumberID}
		for _, name := range strings.Split(f, ",") {
			v, ok := all[name]
			if !ok {
				invalid(w, "(#100) Tried accessing nonexisting field ("+name+") on node type (WhatsAppBusinessPhoneNumber)")
				return
			}
			out[name] = v
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// request is what POST messages takes (the fields the fake knows; others
// are refused).
type request struct {
	MessagingProduct string `json:"messaging_product"`
	RecipientType    string `json:"recipient_type"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Text             *struct {
		Body       string `json:"body"`
		PreviewURL bool   `json:"preview_url"`
	} `json:"text"`
	Interactive *struct {
		Type string `json:"type"`
		Body struct {
			Text string `json:"text"`
		} `json:"body"`
		Action struct {
			Buttons []struct {
				Type  string `json:"type"`
				Reply struct {
					ID    string `json:"id"`
					Title string `json:"title"`
				} `json:"reply"`
			} `json:"buttons"`
		} `json:"action"`
	} `json:"interactive"`
	Template *struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
	} `json:"template"`
	Image    *mediaObject `json:"image"`
	Document *mediaObject `json:"document"`
}

// mediaObject is a media message's media, by the id of an upload.
type mediaObject struct {
	ID       string `json:"id"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
}

var waID = regexp.MustCompile(`^\+?[0-9]{6,15}$`)

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.posts++
	if len(s.fail) > 0 {
		f := s.fail[0]
		s.fail = s.fail[1:]
		s.mu.Unlock()
		writeError(w, f)
		return
	}
	s.mu.Unlock()
	var q request
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		invalid(w, "the request body is not a valid message: "+err.Error())
		return
	}
	m := Sent{To: q.To, Type: q.Type}
	group := q.RecipientType == "group"
	switch {
	case q.MessagingProduct != "whatsapp":
		invalid(w, "messaging_product must be whatsapp")
		return
	case q.RecipientType != "" && q.RecipientType != "individual" && !group:
		invalid(w, "recipient_type must be individual or group")
		return
	case group && q.To != GroupID:
		invalid(w, "to is not a group of this number")
		return
	case group && q.Type == "interactive":
		invalid(w, "a group takes text, media and template messages")
		return
	case !group && !waID.MatchString(q.To):
		invalid(w, "to is not a phone number")
		return
	}
	free := true
	switch q.Type {
	case "text":
		if q.Text == nil || q.Text.Body == "" || q.Interactive != nil || q.Template != nil {
			invalid(w, "a text message needs text.body, and nothing else")
			return
		}
		if utf8.RuneCountInString(q.Text.Body) > 4096 {
			invalid(w, "text.body is longer than 4096 characters")
			return
		}
		m.Text = q.Text.Body
	case "interactive":
		in := q.Interactive
		if in == nil || in.Type != "button" || q.Text != nil || q.Template != nil {
			invalid(w, "an interactive message needs interactive of type button, and nothing else")
			return
		}
		if in.Body.Text == "" || utf8.RuneCountInString(in.Body.Text) > 1024 {
			invalid(w, "interactive.body.text must be 1 to 1024 characters")
			return
		}
		if n := len(in.Action.Buttons); n < 1 || n > 3 {
			invalid(w, "interactive.action.buttons must hold 1 to 3 buttons")
			return
		}
		ids, titles := map[string]bool{}, map[string]bool{}
		for _, b := range in.Action.Buttons {
			t := b.Reply.Title
			if b.Type != "reply" || b.Reply.ID == "" || len(b.Reply.ID) > 256 || t == "" || utf8.RuneCountInString(t) > 20 || ids[b.Reply.ID] || titles[t] {
				invalid(w, "each button must be of type reply, with a unique id of 1 to 256 characters and a unique title of 1 to 20")
				return
			}
			ids[b.Reply.ID], titles[t] = true, true
			m.Buttons = append(m.Buttons, Button{ID: b.Reply.ID, Title: t})
		}
		m.Text = in.Body.Text
	case "template":
		t := q.Template
		if t == nil || t.Name == "" || t.Language.Code == "" || q.Text != nil || q.Interactive != nil {
			invalid(w, "a template message needs template.name and template.language.code, and nothing else")
			return
		}
		m.Template, m.Language, free = t.Name, t.Language.Code, false
	case "image", "document":
		o := q.Image
		if q.Type == "document" {
			o = q.Document
		}
		s.mu.Lock()
		up, ok := s.media[idOf(o)]
		s.mu.Unlock()
		switch {
		case o == nil || !ok:
			invalid(w, "a media message needs the id of an uploaded file")
			return
		case utf8.RuneCountInString(o.Caption) > 1024:
			invalid(w, "the caption is longer than 1024 characters")
			return
		case q.Type == "image" && (up.mimeType != "image/jpeg" && up.mimeType != "image/png" || len(up.data) > 5<<20):
			invalid(w, "an image must be a JPEG or PNG of at most 5 MB")
			return
		}
		m.Media, m.Text, m.Filename = up.data, o.Caption, o.Filename
	default:
		invalid(w, "type "+strconv.Quote(q.Type)+" is not supported")
		return
	}
	s.mu.Lock()
	last, wrote := s.lastIn[q.To]
	if free && !group && (!wrote || s.now().Sub(last) >= 24*time.Hour) {
		s.mu.Unlock()
		writeError(w, WindowClosed)
		return
	}
	m.ID = s.nextID()
	s.sent = append(s.sent, m)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"messaging_product": "whatsapp",
		"contacts": []any{map[string]any{"input": q.To, "wa_id": strings.TrimPrefix(q.To, "+")}},
		"messages": []any{map[string]any{"id": m.ID, "message_status": "accepted"}}})
}

func idOf(o *mediaObject) string {
	if o == nil {
		return ""
	}
	return o.ID
}

// upload takes POST /<phone number id>/media: a multipart form with
// messaging_product whatsapp, the type and the file (of at most 100 MB).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(100 << 20); err != nil {
		invalid(w, "the upload is not a multipart form")
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil || r.FormValue("messaging_product") != "whatsapp" || r.FormValue("type") == "" {
		invalid(w, "an upload needs messaging_product whatsapp, a type and a file")
		return
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	s.mu.Lock()
	id := fmt.Sprintf("%d", 1000000000000000+len(s.media)+1)
	s.media[id] = medium{mimeType: r.FormValue("type"), data: data}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": id})
}

// download serves a media file at the URL GET /<media id> gave.
func (s *Server) download(w http.ResponseWriter, id string) {
	s.mu.Lock()
	m, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", m.mimeType)
	w.Write(m.data)
}

// UserMedia is the user from (named name) sending a file: kind is image,
// document or audio (a voice note when voice is set); the file is kept
// for GET /<media id>.
func (s *Server) UserMedia(from, name, kind, mimeType, filename, caption string, voice bool, data []byte) Notification {
	s.mu.Lock()
	id := fmt.Sprintf("%d", 1000000000000000+len(s.media)+1)
	s.media[id] = medium{mimeType: mimeType, data: data}
	s.mu.Unlock()
	body := map[string]any{"id": id, "mime_type": mimeType, "sha256": fmt.Sprintf("%x", sha256.Sum256(data))}
	switch {
	case kind == "audio":
		body["voice"] = voice
	case caption != "":
		body["caption"] = caption
	}
	if filename != "" {
		body["filename"] = filename
	}
	return s.userMessage(from, name, map[string]any{"type": kind, kind: body})
}

// Notification is a webhook delivery: its body, and the id of the
// message it carries.
type Notification struct {
	MessageID string
	Body      []byte
}

// notify wraps value as Meta's notification of the messages field.
func notify(id string, value map[string]any) Notification {
	value["messaging_product"] = "whatsapp"
	value["metadata"] = map[string]any{"display_phone_number": DisplayPhoneNumber, "phone_number_id": PhoneNumberID}
	b, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": AccountID, "changes": []any{map[string]any{"value": value, "field": "messages"}}}}})
	return Notification{MessageID: id, Body: b}
}

// userMessage records that from wrote now (the window opens) and
// returns the notification of msg, which gets from, id and timestamp.
func (s *Server) userMessage(from, name string, msg map[string]any) Notification {
	s.mu.Lock()
	now := s.now()
	s.lastIn[from] = now
	id := s.nextID()
	s.mu.Unlock()
	msg["from"], msg["id"], msg["timestamp"] = from, id, strconv.FormatInt(now.Unix(), 10)
	return notify(id, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{msg}})
}

// UserText is the user from (named name) sending text: their window opens
// and the notification Meta delivers is returned.
func (s *Server) UserText(from, name, text string) Notification {
	return s.userMessage(from, name, map[string]any{"type": "text", "text": map[string]any{"body": text}})
}

// UserGroupText is the user from (named name) writing text in the group,
// mentioning the business number when mention is set.
func (s *Server) UserGroupText(from, name, text string, mention bool) Notification {
	if mention {
		text = "@" + DisplayPhoneNumber + " " + text
	}
	s.mu.Lock()
	ts := strconv.FormatInt(s.now().Unix(), 10)
	id := s.nextID()
	s.mu.Unlock()
	return notify(id, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{"from": from, "group_id": GroupID, "id": id, "timestamp": ts,
			"type": "text", "text": map[string]any{"body": text}}}})
}

// UserPress is the user from pressing the button buttonID of the message
// messageID the business sent them; an error says there is no such
// button.
func (s *Server) UserPress(from, name, messageID, buttonID string) (Notification, error) {
	s.mu.Lock()
	var title string
	for _, m := range s.sent {
		for _, b := range m.Buttons {
			if m.ID == messageID && m.To == from && b.ID == buttonID {
				title = b.Title
			}
		}
	}
	s.mu.Unlock()
	if title == "" {
		return Notification{}, fmt.Errorf("fakewhatsapp: no button %q on message %s to %s", buttonID, messageID, from)
	}
	return s.Press(from, name, messageID, buttonID, title), nil
}

// Press is the notification of the user from pressing a button with id
// buttonID and title on the message messageID, whether or not the
// business sent them such a button (a client that forges it).
func (s *Server) Press(from, name, messageID, buttonID, title string) Notification {
	return s.userMessage(from, name, map[string]any{"type": "interactive",
		"context":     map[string]any{"from": DisplayPhoneNumber, "id": messageID},
		"interactive": map[string]any{"type": "button_reply", "button_reply": map[string]any{"id": buttonID, "title": title}}})
}

// Status is the notification of a status of the message id sent to
// recipient: sent, delivered, read, or failed with the Graph error code.
func (s *Server) Status(id, recipient, status string, code int) Notification {
	s.mu.Lock()
	ts := strconv.FormatInt(s.now().Unix(), 10)
	s.mu.Unlock()
	st := map[string]any{"id": id, "status": status, "timestamp": ts, "recipient_id": recipient}
	if code != 0 {
		st["errors"] = []any{map[string]any{"code": code, "title": "error " + strconv.Itoa(code),
			"href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}}
	}
	return notify(id, map[string]any{"statuses": []any{st}})
}

// Sign is the X-Hub-Signature-256 of body with secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Deliver posts n to url signed with AppSecret, as Meta does, and returns
// the status code.
func Deliver(url string, n Notification) (int, error) {
	return Post(url, Sign(AppSecret, n.Body), n.Body)
}

// Post posts body to url with signature (none when empty) and returns
// the status code.
func Post(url, signature string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Verify sends Meta's verification request to webhook with mode, token
// and challenge, and returns the status and the body of the answer.
func Verify(webhook, mode, token, challenge string) (int, string, error) {
	q := url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
	resp, err := http.Get(webhook + "?" + q.Encode())
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
