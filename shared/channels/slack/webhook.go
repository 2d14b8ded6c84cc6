package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// The local server's routes of the Events API and of interactivity: the
// Request URLs given to Slack.
const (
	EventsPath      = "/channels/slack/events"
	InteractivePath = "/channels/slack/interactive"
)

// Request signing (api.slack.com/authentication/verifying-requests-from-slack).
const (
	SignatureHeader = "X-Slack-Signature"
	TimestampHeader = "X-Slack-Request-Timestamp"
	// MaxSkew is how far a request's timestamp may be from now: older
	// requests are replays.
	MaxSkew = 5 * time.Minute
	// maxBody bounds a delivery (Slack's are a few KiB).
	maxBody = 1 << 20
)

// Signature errors: a request without them, one whose timestamp is out of
// the replay window, one whose signature is wrong.
var (
	ErrUnsigned = errors.New("slack: request not signed")
	ErrStale    = errors.New("slack: request timestamp outside the replay window")
	ErrForged   = errors.New("slack: bad request signature")
)

// Sign is the X-Slack-Signature of body sent at ts (unix seconds).
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a request's signature (version v0) against the signing
// secret, in constant time, and its timestamp against now. Without a
// secret nothing verifies.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	ts, sig := h.Get(TimestampHeader), h.Get(SignatureHeader)
	if ts == "" || sig == "" {
		return ErrUnsigned
	}
	if secret == "" {
		return ErrForged
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrForged
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return ErrStale
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(secret, ts, body))) {
		return ErrForged
	}
	return nil
}

// Receiver takes what Slack delivers, over HTTP (Events and
// Interactive) or Socket Mode, and hands each message or button press to
// Handle.
type Receiver struct {
	// SigningSecret verifies HTTP deliveries (Socket Mode's are not
	// signed: the connection is authenticated).
	SigningSecret string
	Parser        Parser
	// Handle takes an Inbound quickly (the engine's Handle: a dedupe and
	// an enqueue); an error makes Slack deliver it again.
	Handle func(ctx context.Context, in channel.Inbound) error
	// Client, when set, marks a prompt answered in a DM (Client.Answered)
	// once its press was handled.
	Client *Client
	// Now is the clock of the replay window; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

func (r *Receiver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Receiver) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// event handles one event_callback (or url_verification, whose
// challenge it returns).
func (r *Receiver) event(ctx context.Context, body []byte) (challenge string, err error) {
	var cb callback
	if err := json.Unmarshal(body, &cb); err != nil {
		return "", fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if cb.Type == "url_verification" {
		return cb.Challenge, nil
	}
	in, ok, err := r.Parser.Event(cb)
	if err != nil || !ok {
		return "", err
	}
	return "", r.Handle(ctx, in)
}

// interaction handles one interactivity payload; answered, run after the
// press was handed over, marks its prompt answered.
func (r *Receiver) interaction(ctx context.Context, payload []byte) (answered func(), err error) {
	var it interaction
	if err := json.Unmarshal(payload, &it); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	in, ok, err := r.Parser.Action(it)
	if err != nil || !ok {
		return nil, err
	}
	if err := r.Handle(ctx, in); err != nil {
		return nil, err
	}
	if r.Client == nil || in.Group || it.Message == nil {
		return func() {}, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		choice := fmt.Sprintf("<@%s> chose *%s*", in.User, Escape(it.Actions[0].Text.Text))
		if err := r.Client.Answered(ctx, it.Container.ChannelID, it.Container.MessageTS, it.Message.Text, it.Message.Blocks, choice); err != nil {
			r.log().Warn("slack: mark prompt answered", "error", err)
		}
	}, nil
}

var errBadRequest = errors.New("bad request")

// read reads and verifies an HTTP delivery, answering the failures.
func (r *Receiver) read(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if err := Verify(r.SigningSecret, req.Header, body, r.now()); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

// fail answers an error of a verified delivery: 400 for a malformed one,
// 403 for another workspace's, 500 (Slack retries) otherwise.
func (r *Receiver) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errBadRequest):
		http.Error(w, "bad request", http.StatusBadRequest)
	case errors.Is(err, errForeignTeam):
		http.Error(w, "unknown workspace", http.StatusForbidden)
	default:
		r.log().Error("slack: handle delivery", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// Events is the Events API's Request URL (EventsPath): it verifies the
// signature, answers the url_verification challenge and hands an event
// to Handle, answering 200 once it is taken.
func (r *Receiver) Events() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, ok := r.read(w, req)
		if !ok {
			return
		}
		challenge, err := r.event(req.Context(), body)
		if err != nil {
			r.fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if challenge != "" {
			json.NewEncoder(w).Encode(map[string]string{"challenge": challenge})
			return
		}
		w.Write([]byte("{}\n"))
	})
}

// Interactive is the interactivity Request URL (InteractivePath): a
// form whose payload field is the interaction's JSON, signed as events
// are.
func (r *Receiver) Interactive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, ok := r.read(w, req)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil || strings.TrimSpace(form.Get("payload")) == "" {
			http.Error(w, "missing payload", http.StatusBadRequest)
			return
		}
		answered, err := r.interaction(req.Context(), []byte(form.Get("payload")))
		if err != nil {
			r.fail(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
		if answered != nil {
			http.NewResponseController(w).Flush()
			answered()
		}
	})
}
