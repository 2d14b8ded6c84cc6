package whatsapp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// WebhookPath is the local server's route of the webhook (GET and POST).
const WebhookPath = "/channels/whatsapp/webhook"

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body
// with the app secret.
const SignatureHeader = "X-Hub-Signature-256"

// MaxBody bounds a delivery's body.
const MaxBody = 1 << 20

// maxChallenge bounds the echoed hub.challenge.
const maxChallenge = 1024

// Handle takes one inbound message (the engine's channel.Channel.Handle):
// fast, and an error means the delivery should be repeated.
type Handle func(ctx context.Context, in channel.Inbound) error

// Webhook returns the handler of WebhookPath: GET answers Meta's
// verification request, POST takes signed deliveries and hands their
// messages to handle.
func (p *Platform) Webhook(handle Handle) http.Handler {
	return &webhook{p: p, handle: handle}
}

type webhook struct {
	p      *Platform
	handle Handle
}

// ServeHTTP answers the verification (GET) and deliveries (POST).
func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.verify(w, r)
	case http.MethodPost:
		h.deliver(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// verify echoes hub.challenge when hub.mode is subscribe and
// hub.verify_token is the configured token (compared in constant time);
// anything else is 403.
func (h *webhook) verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	challenge := q.Get("hub.challenge")
	if q.Get("hub.mode") != "subscribe" || !sameSecret(q.Get("hub.verify_token"), h.p.cfg.VerifyToken) ||
		challenge == "" || len(challenge) > maxChallenge {
		http.Error(w, "verification refused", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	io.WriteString(w, challenge)
}

// sameSecret compares got with want in constant time; an empty want
// matches nothing.
func sameSecret(got, want string) bool {
	g, x := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(g[:], x[:]) == 1
}

// validSignature reports whether header is "sha256=" and the hex
// HMAC-SHA256 of body with secret (an empty secret signs nothing).
func validSignature(header string, body []byte, secret string) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	got, err := hex.DecodeString(hexSum)
	if !ok || err != nil || secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// deliver checks the signature (401 when missing, 403 when wrong), then
// hands the messages for the configured number to handle, recording each
// user's last message for the customer service window. Statuses are
// logged. What is for another number (of the same business account,
// since Meta signed it) starts nothing and is answered 200 all the same:
// Meta retries other answers for days and may disable a webhook that
// keeps failing, this number's with it. A failure of handle is 500, so that
// Meta delivers again (the engine drops what it has handled already, by
// message id).
func (h *webhook) deliver(w http.ResponseWriter, r *http.Request) {
	sig := r.Header.Get(SignatureHeader)
	if sig == "" {
		http.Error(w, "missing signature", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if !validSignature(sig, body, h.p.cfg.AppSecret) {
		http.Error(w, "bad signature", http.StatusForbidden)
		return
	}
	var n notification
	if err := json.Unmarshal(body, &n); err != nil {
		http.Error(w, "bad notification", http.StatusBadRequest)
		return
	}
	for _, e := range n.Entry {
		for _, c := range e.Changes {
			if c.Field != "messages" {
				continue
			}
			if c.Value.Metadata.PhoneNumberID != h.p.cfg.PhoneNumberID {
				h.p.cfg.Log.Warn("whatsapp: a delivery for another phone number ignored", "phone_number_id", c.Value.Metadata.PhoneNumberID)
				continue
			}
			if err := h.change(r.Context(), c.Value); err != nil {
				h.p.cfg.Log.Error("whatsapp: handle delivery", "error", err)
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// change handles one change of the messages field.
func (h *webhook) change(ctx context.Context, v value) error {
	log := h.p.cfg.Log
	for _, s := range v.Statuses {
		args := []any{"message_id", s.ID, "status", s.Status}
		for _, e := range s.Errors {
			args = append(args, "error_code", e.Code, "error", e.Title)
		}
		if s.Status != "failed" {
			log.Debug("whatsapp: message status", args...)
			continue
		}
		log.Warn("whatsapp: a message failed", args...)
		for _, e := range s.Errors {
			// A user's (digits), not a group's: only users have windows.
			if e.Code == CodeReengagement && s.RecipientID != "" && strings.Trim(s.RecipientID, "0123456789") == "" {
				h.reengage(ctx, s.RecipientID)
				break
			}
		}
	}
	for _, m := range v.Messages {
		in, ok := h.inbound(v, m)
		if !ok {
			continue
		}
		// A message in a group opens no window of the sender's own.
		if !in.Group {
			if err := h.p.recordIn(ctx, in.User, in.At); err != nil {
				return err
			}
		}
		if in.Text == "" && in.Action == "" && len(in.Attachments) == 0 {
			log.Info("whatsapp: message type not handled", "type", m.Type, "message_id", m.ID)
			continue
		}
		if err := h.handle(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

// reengage sends the template to a user a message could not reach
// because their window had closed (WhatsApp said so after accepting the
// message), unless they wrote since. What fails is logged: the status
// is not delivered again for it.
func (h *webhook) reengage(ctx context.Context, to string) {
	last, err := h.p.lastIn(ctx, to)
	if err == nil && !last.IsZero() && h.p.cfg.Now().Sub(last) < Window {
		return
	}
	if err == nil {
		_, err = h.p.windowClosed(ctx, to, last)
	}
	if err != nil {
		h.p.cfg.Log.Warn("whatsapp: a reply was not delivered", "error", err)
	}
}

// inbound turns m into an Inbound; its Text and Action are empty for a
// message type the channel does not read. A message without sender or id
// is not one (ok false). A group's message (the Groups API) belongs to the
// group ("#" and its id) and is addressed to the bot when it mentions the
// number ("@" and its display number, removed from the text) or replies
// to one of its messages.
func (h *webhook) inbound(v value, m waMessage) (channel.Inbound, bool) {
	if m.From == "" || m.ID == "" {
		h.p.cfg.Log.Info("whatsapp: message without sender ignored", "message_id", m.ID)
		return channel.Inbound{}, false
	}
	in := channel.Inbound{ID: m.ID, Workspace: v.Metadata.PhoneNumberID, User: m.From, Principal: m.From, To: m.From, Addressed: true}
	if m.GroupID != "" {
		in.Group, in.Principal, in.To = true, "#"+m.GroupID, GroupPrefix+m.GroupID
		in.Addressed = m.Context.From != "" && m.Context.From == v.Metadata.DisplayPhoneNumber
	}
	for _, c := range v.Contacts {
		if c.WaID == m.From {
			in.Name = c.Profile.Name
		}
	}
	now := h.p.cfg.Now()
	in.At = now
	if s, err := strconv.ParseInt(m.Timestamp, 10, 64); err == nil && s > 0 && time.Unix(s, 0).Before(now) {
		in.At = time.Unix(s, 0)
	}
	switch m.Type {
	case "text":
		in.Text = m.Text.Body
		if mention := "@" + v.Metadata.DisplayPhoneNumber; in.Group && v.Metadata.DisplayPhoneNumber != "" && strings.Contains(in.Text, mention) {
			in.Addressed, in.Text = true, strings.TrimSpace(strings.ReplaceAll(in.Text, mention, ""))
		}
	case "interactive":
		if m.Interactive.Type == "button_reply" {
			in.Action = m.Interactive.ButtonReply.ID
		}
	case "button": // a template's quick reply button
		in.Text = m.Button.Text
	case "image", "document", "audio":
		if in.Attachments = h.attachments(m); len(in.Attachments) > 0 && m.Type != "audio" {
			in.Text = map[string]*mediaBody{"image": m.Image, "document": m.Document}[m.Type].Caption
		}
	}
	return in, true
}

// notification is a webhook delivery (object whatsapp_business_account).
type notification struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value value  `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// value is the value of a change of the messages field.
type value struct {
	MessagingProduct string `json:"messaging_product"`
	Metadata         struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []waMessage `json:"messages"`
	Statuses []struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		Timestamp   string `json:"timestamp"`
		RecipientID string `json:"recipient_id"`
		Errors      []struct {
			Code  int    `json:"code"`
			Title string `json:"title"`
		} `json:"errors"`
	} `json:"statuses"`
}

// waMessage is one message a user sent.
type waMessage struct {
	From      string `json:"from"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	GroupID   string `json:"group_id"`
	// Context names the message this one replies to.
	Context struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context"`
	Text struct {
		Body string `json:"body"`
	} `json:"text"`
	Interactive struct {
		Type        string `json:"type"`
		ButtonReply struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"button_reply"`
	} `json:"interactive"`
	Button struct {
		Payload string `json:"payload"`
		Text    string `json:"text"`
	} `json:"button"`
	// Image, Document and Audio are a media message's, by its Type.
	Image    *mediaBody `json:"image"`
	Document *mediaBody `json:"document"`
	Audio    *mediaBody `json:"audio"`
}
