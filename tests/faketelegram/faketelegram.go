// Package faketelegram is a fake Telegram Bot API server for tests: the
// ok/result envelope, error codes and descriptions, 429 with retry_after,
// getUpdates long polling with offset semantics, webhook calls with or
// without the secret header, "message is not modified", and
// sendMessageDraft (private chats only; or unknown, as on an older server),
// inline keyboards (reply_markup with callback_data, 1-64 bytes) and the
// callback queries of their buttons (Callback, answerCallbackQuery), forum
// topics (message_thread_id), and the webhook calls setWebhook,
// deleteWebhook and getWebhookInfo.
package faketelegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the bot token the fake accepts.
const Token = "123456:TEST-fake-token-secret"

// Bot is the fake bot's own user.
var Bot = map[string]any{"id": 999, "is_bot": true, "first_name": "Claw", "username": "clawbot"}

// Sent is a message the bot sent, or a later edit of it.
type Sent struct {
	ChatID    int64
	MessageID int64
	// ThreadID is the forum topic it was sent to (message_thread_id).
	ThreadID int64
	Text     string
	// Buttons are its inline keyboard's buttons, row after row.
	Buttons []Button
	Deleted bool
	// Photo or Document is the file of a sendPhoto or sendDocument
	// (FileName its name), Text then its caption.
	Photo, Document []byte
	FileName        string
}

// Button is an inline keyboard's button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// Draft is one sendMessageDraft call that Telegram accepted.
type Draft struct {
	ChatID  int64
	DraftID int64
	Text    string
}

// Failure is an error answer injected for the next call of a method.
type Failure struct {
	Code        int
	Description string
	RetryAfter  int
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	cond    *sync.Cond
	updates []json.RawMessage
	ids     []int64
	nextID  int64
	msgs    []*Sent
	drafts  []Draft
	unknown map[string]bool
	calls   map[string]int
	fail    map[string][]Failure
	webhook string
	secret  string
	// allowed is the webhook's allowed_updates, kept from setWebhook
	// to setWebhook when one does not give it (as Telegram does).
	allowed []any
	polls   int
	// files are what users sent, by file_id (AddFile).
	files map[string][]byte
}

// New starts a fake server.
func New() *Server {
	s := &Server{nextID: 100, calls: map[string]int{}, unknown: map[string]bool{}, fail: map[string][]Failure{}, files: map[string][]byte{}}
	s.cond = sync.NewCond(&s.mu)
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Close stops the server, waking pollers.
func (s *Server) Close() {
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// FailNext makes the next calls of method answer with fs, in order.
func (s *Server) FailNext(method string, fs ...Failure) {
	s.mu.Lock()
	s.fail[method] = append(s.fail[method], fs...)
	s.mu.Unlock()
}

// Unsupported makes the server answer method with 404 "Not Found", as an
// older self-hosted telegram-bot-api does for methods it does not know
// (sendMessageDraft before Bot API 9.x).
func (s *Server) Unsupported(method string) {
	s.mu.Lock()
	s.unknown[method] = true
	s.mu.Unlock()
}

// Drafts returns the drafts accepted for chatID, in order.
func (s *Server) Drafts(chatID int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Draft
	for _, d := range s.drafts {
		if d.ChatID == chatID {
			out = append(out, d)
		}
	}
	return out
}

// Message builds an update with a text message from user in chat.
func Message(updateID, chatID, userID int64, chatType, text string) map[string]any {
	return map[string]any{"update_id": updateID, "message": map[string]any{
		"message_id": updateID * 10, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "U"},
		"chat": map[string]any{"id": chatID, "type": chatType},
	}}
}

// Callback builds an update with the press of the button whose
// callback_data is data, by user on the message messageID in chat.
func Callback(updateID, chatID, userID int64, chatType string, messageID int64, data string) map[string]any {
	return map[string]any{"update_id": updateID, "callback_query": map[string]any{
		"id": fmt.Sprintf("cb%d", updateID), "chat_instance": fmt.Sprint(chatID), "data": data,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "U"},
		"message": map[string]any{"message_id": messageID, "date": time.Now().Unix(), "text": "(the bot's message)", "from": Bot,
			"chat": map[string]any{"id": chatID, "type": chatType}},
	}}
}

// InTopic puts the message of update u in the forum topic threadID of a
// forum supergroup.
func InTopic(u map[string]any, threadID int64) map[string]any {
	m := u["message"].(map[string]any)
	m["message_thread_id"], m["is_topic_message"] = threadID, true
	m["chat"].(map[string]any)["is_forum"] = true
	return u
}

// Push queues an update for getUpdates (a repeated update_id is a
// duplicate delivery).
func (s *Server) Push(u map[string]any) {
	b, _ := json.Marshal(u)
	s.mu.Lock()
	s.updates = append(s.updates, b)
	s.ids = append(s.ids, toInt(u["update_id"]))
	s.cond.Broadcast()
	s.mu.Unlock()
}

// PostWebhook delivers u to url as Telegram does, with secret as the
// secret header when not empty, and returns the status code.
func PostWebhook(url, secret string, u map[string]any) (int, error) {
	b, _ := json.Marshal(u)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Webhook returns the registered webhook URL and secret.
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook, s.secret
}

// Messages returns the messages sent to chatID that were not deleted
// (drafts are deleted), in order.
func (s *Server) Messages(chatID int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.msgs {
		if m.ChatID == chatID && !m.Deleted {
			out = append(out, *m)
		}
	}
	return out
}

// Calls returns how often method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Pending returns how many queued updates are not confirmed by an offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// Polls returns how many getUpdates calls are waiting now.
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// keyboard reads the buttons of an inline keyboard's reply_markup; ok
// is false when one is not as Telegram takes it (text, and callback_data
// of 1-64 bytes).
func keyboard(markup any) (buttons []Button, ok bool) {
	if markup == nil {
		return nil, true
	}
	b, _ := json.Marshal(markup)
	var m struct {
		InlineKeyboard [][]Button `json:"inline_keyboard"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	for _, row := range m.InlineKeyboard {
		for _, bt := range row {
			if bt.Text == "" || bt.CallbackData == "" || len(bt.CallbackData) > 64 {
				return nil, false
			}
			buttons = append(buttons, bt)
		}
	}
	return buttons, true
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, f Failure) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
		if f.Description == "" {
			body["description"] = fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	json.NewEncoder(w).Encode(body)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if path, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+Token+"/"); ok {
		s.download(w, path)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeErr(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	if token != Token {
		writeErr(w, Failure{Code: 401, Description: "Unauthorized"})
		return
	}
	var p map[string]any
	var upload *multipart.FileHeader
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(50 << 20); err != nil {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: invalid multipart form"})
			return
		}
		p = map[string]any{}
		for k, v := range r.MultipartForm.Value {
			p[k] = v[0]
		}
		for _, fs := range r.MultipartForm.File {
			upload = fs[0]
		}
	} else if err := json.NewDecoder(r.Body).Decode(&p); err != nil && r.ContentLength > 0 {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: invalid JSON"})
		return
	}
	s.mu.Lock()
	s.calls[method]++
	if s.unknown[method] {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	if fs := s.fail[method]; len(fs) > 0 {
		s.fail[method] = fs[1:]
		s.mu.Unlock()
		writeErr(w, fs[0])
		return
	}
	s.mu.Unlock()
	switch method {
	case "getMe":
		writeOK(w, Bot)
	case "getFile":
		s.getFile(w, p)
	case "sendPhoto", "sendDocument":
		s.sendFile(w, method, p, upload)
	case "getUpdates":
		s.getUpdates(w, r, p)
	case "sendMessage":
		text, _ := p["text"].(string)
		if text == "" {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: message text is empty"})
			return
		}
		if len([]rune(text)) > 4096 {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: message is too long"})
			return
		}
		buttons, ok := keyboard(p["reply_markup"])
		if !ok {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: BUTTON_DATA_INVALID"})
			return
		}
		s.mu.Lock()
		s.nextID++
		m := &Sent{ChatID: toInt(p["chat_id"]), MessageID: s.nextID, ThreadID: toInt(p["message_thread_id"]), Text: text, Buttons: buttons}
		s.msgs = append(s.msgs, m)
		s.mu.Unlock()
		writeOK(w, map[string]any{"message_id": m.MessageID, "date": time.Now().Unix(), "text": text,
			"chat": map[string]any{"id": m.ChatID, "type": "private"}, "from": Bot})
	case "editMessageText", "deleteMessage":
		s.mu.Lock()
		var m *Sent
		for _, x := range s.msgs {
			if x.ChatID == toInt(p["chat_id"]) && x.MessageID == toInt(p["message_id"]) {
				m = x
			}
		}
		if m == nil {
			s.mu.Unlock()
			writeErr(w, Failure{Code: 400, Description: "Bad Request: message to edit not found"})
			return
		}
		if method == "deleteMessage" {
			m.Deleted = true
			s.mu.Unlock()
			writeOK(w, true)
			return
		}
		text, _ := p["text"].(string)
		if text == m.Text {
			s.mu.Unlock()
			writeErr(w, Failure{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
			return
		}
		m.Text = text
		s.mu.Unlock()
		writeOK(w, map[string]any{"message_id": m.MessageID, "text": text, "chat": map[string]any{"id": m.ChatID}})
	case "sendMessageDraft":
		// Drafts exist only in private chats, whose ids are positive.
		chatID, draftID := toInt(p["chat_id"]), toInt(p["draft_id"])
		text, _ := p["text"].(string)
		switch {
		case chatID == 0:
			writeErr(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
		case chatID < 0:
			writeErr(w, Failure{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		case draftID == 0:
			writeErr(w, Failure{Code: 400, Description: "Bad Request: draft_id must be non-zero"})
		case len([]rune(text)) > 4096:
			writeErr(w, Failure{Code: 400, Description: "Bad Request: text is too long"})
		default:
			s.mu.Lock()
			s.drafts = append(s.drafts, Draft{ChatID: chatID, DraftID: draftID, Text: text})
			s.mu.Unlock()
			writeOK(w, true)
		}
	case "sendChatAction":
		writeOK(w, true)
	case "answerCallbackQuery":
		if id, _ := p["callback_query_id"].(string); id == "" {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: query is too old and response timeout expired or query ID is invalid"})
			return
		}
		writeOK(w, true)
	case "setWebhook":
		s.mu.Lock()
		s.webhook, _ = p["url"].(string)
		s.secret, _ = p["secret_token"].(string)
		if a, ok := p["allowed_updates"].([]any); ok {
			s.allowed = a
		}
		s.mu.Unlock()
		writeOK(w, true)
	case "getWebhookInfo":
		s.mu.Lock()
		info := map[string]any{"url": s.webhook, "has_custom_certificate": false, "pending_update_count": len(s.ids)}
		if len(s.allowed) > 0 {
			info["allowed_updates"] = s.allowed
		}
		s.mu.Unlock()
		writeOK(w, info)
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		s.mu.Unlock()
		writeOK(w, true)
	default:
		writeErr(w, Failure{Code: 404, Description: "Not Found: method not found"})
	}
}

// AddFile keeps data as a file a user sent and returns its file_id.
func (s *Server) AddFile(data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("AgACAgIAAxkBAAI%04d", len(s.files)+1)
	s.files[id] = data
	return id
}

// Photo builds an update with a photo from user in a private chat: the
// file fileID (AddFile) in two sizes, as Telegram sends a photo, with a
// caption.
func Photo(updateID, userID int64, fileID string, size int, caption string) map[string]any {
	u := media(updateID, userID, caption)
	u["message"].(map[string]any)["photo"] = []map[string]any{
		{"file_id": fileID + "s", "file_unique_id": "s" + fileID, "width": 90, "height": 67, "file_size": 1200},
		{"file_id": fileID, "file_unique_id": "u" + fileID, "width": 1280, "height": 960, "file_size": size},
	}
	return u
}

// Document builds an update with a document from user in a private chat.
func Document(updateID, userID int64, fileID, name, mimeType string, size int, caption string) map[string]any {
	u := media(updateID, userID, caption)
	u["message"].(map[string]any)["document"] = map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID,
		"file_name": name, "mime_type": mimeType, "file_size": size}
	return u
}

// Voice builds an update with a voice note (OGG/Opus) from user in a
// private chat.
func Voice(updateID, userID int64, fileID string, size int) map[string]any {
	u := media(updateID, userID, "")
	u["message"].(map[string]any)["voice"] = map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID,
		"duration": 3, "mime_type": "audio/ogg", "file_size": size}
	return u
}

// media is a message update with a caption, without its media yet.
func media(updateID, userID int64, caption string) map[string]any {
	u := Message(updateID, userID, userID, "private", "")
	m := u["message"].(map[string]any)
	delete(m, "text")
	if caption != "" {
		m["caption"] = caption
	}
	return u
}

// sendFile takes a photo or a document uploaded as a multipart form, with
// Telegram's limits: a photo of at most 10 MB that is an image, a
// document of at most 50 MB, a caption of at most 1024 characters.
func (s *Server) sendFile(w http.ResponseWriter, method string, p map[string]any, upload *multipart.FileHeader) {
	field := "photo"
	if method == "sendDocument" {
		field = "document"
	}
	if upload == nil || upload.Filename == "" {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: there is no " + field + " in the request"})
		return
	}
	f, err := upload.Open()
	if err != nil {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: invalid file"})
		return
	}
	data, _ := io.ReadAll(f)
	f.Close()
	caption, _ := p["caption"].(string)
	png, jpeg := bytes.HasPrefix(data, []byte("\x89PNG")), bytes.HasPrefix(data, []byte("\xff\xd8\xff"))
	switch {
	case field == "photo" && len(data) > 10<<20:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: PHOTO_INVALID_DIMENSIONS"})
		return
	case field == "photo" && !png && !jpeg:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: IMAGE_PROCESS_FAILED"})
		return
	case len(data) > 50<<20:
		writeErr(w, Failure{Code: 413, Description: "Request Entity Too Large"})
		return
	case len([]rune(caption)) > 1024:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message caption is too long"})
		return
	}
	chatID, _ := strconv.ParseInt(fmt.Sprint(p["chat_id"]), 10, 64)
	thread, _ := strconv.ParseInt(fmt.Sprint(p["message_thread_id"]), 10, 64)
	s.mu.Lock()
	s.nextID++
	m := &Sent{ChatID: chatID, MessageID: s.nextID, ThreadID: thread, Text: caption, FileName: upload.Filename}
	if field == "photo" {
		m.Photo = data
	} else {
		m.Document = data
	}
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	writeOK(w, map[string]any{"message_id": m.MessageID, "date": time.Now().Unix(), "caption": caption,
		"chat": map[string]any{"id": chatID, "type": "private"}, "from": Bot})
}

// getFile answers a File with the path to download it from, refusing an
// unknown file_id and a file over the Bot API's 20 MB.
func (s *Server) getFile(w http.ResponseWriter, p map[string]any) {
	id, _ := p["file_id"].(string)
	s.mu.Lock()
	data, ok := s.files[id]
	s.mu.Unlock()
	switch {
	case !ok:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: invalid file_id"})
	case len(data) > 20<<20:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: file is too big"})
	default:
		writeOK(w, map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(data), "file_path": "documents/" + id})
	}
}

// download serves a file by the path getFile gave.
func (s *Server) download(w http.ResponseWriter, path string) {
	s.mu.Lock()
	data, ok := s.files[strings.TrimPrefix(path, "documents/")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

// getUpdates confirms every update below offset, then returns the others
// at once or waits up to timeout seconds for one.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]any) {
	offset := toInt(p["offset"])
	timeout := time.Duration(toInt(p["timeout"])) * time.Second
	deadline := time.Now().Add(timeout)
	s.mu.Lock()
	if s.webhook != "" {
		s.mu.Unlock()
		writeErr(w, Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	if offset > 0 {
		for len(s.ids) > 0 && s.ids[0] < offset {
			s.ids, s.updates = s.ids[1:], s.updates[1:]
		}
	}
	stop := context(r, s)
	s.polls++
	for len(s.ids) == 0 && time.Now().Before(deadline) && r.Context().Err() == nil {
		s.cond.Wait()
	}
	s.polls--
	stop()
	out := make([]json.RawMessage, len(s.updates))
	copy(out, s.updates)
	s.mu.Unlock()
	writeOK(w, out)
}

// context wakes the poller when its request ends or its timeout passes.
func context(r *http.Request, s *Server) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.Context().Done():
			case <-t.C:
			}
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
			if r.Context().Err() != nil {
				return
			}
		}
	}()
	return func() { close(done) }
}
