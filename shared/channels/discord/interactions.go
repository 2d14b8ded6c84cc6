package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// InteractionsPath is the local server's route of the Interactions
// endpoint (the application's Interactions Endpoint URL).
const InteractionsPath = "/channels/discord/interactions"

// Signature headers of an interaction.
const (
	SignatureHeader = "X-Signature-Ed25519"
	TimestampHeader = "X-Signature-Timestamp"
)

// ReplayWindow is how far an interaction's signed timestamp may be from
// now: an older (or later) one is refused even when its signature is
// good.
const ReplayWindow = 5 * time.Minute

// maxInteractionBytes bounds an interaction's body.
const maxInteractionBytes = 1 << 20

// Interaction callback types.
const (
	callbackPong            = 1
	callbackMessage         = 4
	callbackDeferredMessage = 5
	callbackDeferredUpdate  = 6
)

// flagEphemeral makes a message seen only by the interaction's user.
const flagEphemeral = 1 << 6

// What the interaction's user is told when the channel cannot go on.
const (
	unavailable = "Sorry, I could not take that just now; please try again."
	unsupported = "Sorry, I do not know that interaction."
)

// Config wires the receiving half of the channel: the Interactions
// endpoint and the Gateway.
type Config struct {
	Client *Client
	// PublicKey is the application's Ed25519 public key, in hex, as the
	// Developer Portal shows it; the Interactions endpoint needs it.
	PublicKey string
	// Handle takes what Discord delivered (the engine's
	// channel.Channel.Handle); an error means it was not taken.
	Handle func(ctx context.Context, in channel.Inbound) error
	// State keeps the Gateway's session across a restart, so that a
	// resumed session replays what was missed (store.Channel); optional.
	State State
	Log   *slog.Logger
	// Now is the clock of the replay window; nil means time.Now.
	Now func() time.Time
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Interactions is the HTTP endpoint Discord posts interactions to.
type Interactions struct {
	cfg  Config
	key  ed25519.PublicKey
	conv conversations
}

// NewInteractions returns the endpoint; cfg needs Client, PublicKey and
// Handle.
func NewInteractions(cfg Config) (*Interactions, error) {
	key, err := ParsePublicKey(cfg.PublicKey)
	if err != nil {
		return nil, err
	}
	if cfg.Client == nil || cfg.Handle == nil {
		return nil, errors.New("discord: interactions need a client and a handler")
	}
	return &Interactions{cfg: cfg, key: key, conv: conversations{client: cfg.Client}}, nil
}

// ParsePublicKey parses an application's public key (64 hex digits).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("discord: the public key must be %d hex digits (the application's Public Key in the Developer Portal)", 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Verify checks an interaction's signature: sig (hex) signs timestamp +
// body with key, and timestamp (Unix seconds) is within ReplayWindow of
// now.
func Verify(key ed25519.PublicKey, sig, timestamp string, body []byte, now time.Time) error {
	if sig == "" || timestamp == "" {
		return errors.New("missing signature")
	}
	s, err := hex.DecodeString(sig)
	if err != nil || len(s) != ed25519.SignatureSize {
		return errors.New("malformed signature")
	}
	msg := make([]byte, 0, len(timestamp)+len(body))
	msg = append(append(msg, timestamp...), body...)
	if !ed25519.Verify(key, msg, s) {
		return errors.New("bad signature")
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("malformed timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > ReplayWindow || d < -ReplayWindow {
		return errors.New("timestamp outside the replay window")
	}
	return nil
}

// ServeHTTP verifies the signature (401 when it is missing, bad or
// stale, as Discord requires), answers a PING with a PONG, and hands an
// application command or a pressed button to the engine, answering with
// a deferred response once the engine took it (the engine's Handle is
// quick: it records the delivery and starts the run). If the engine
// cannot take it, the user is told so: Discord does not deliver an
// interaction again.
func (h *Interactions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInteractionBytes))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := Verify(h.key, r.Header.Get(SignatureHeader), r.Header.Get(TimestampHeader), body, h.cfg.now()); err != nil {
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return
	}
	var it Interaction
	if err := json.Unmarshal(body, &it); err != nil {
		http.Error(w, "bad interaction", http.StatusBadRequest)
		return
	}
	if it.Type == interactionPing {
		writeJSON(w, map[string]int{"type": callbackPong})
		return
	}
	writeJSON(w, answer(r.Context(), h.cfg, &h.conv, &it))
}

// answer converts an interaction, hands it to the engine and returns the
// interaction's response: the channel's own reply (/help, the
// confirmation of /reset or /stop, a refusal) as its message, since a
// follow-up is refused until Discord has the response; else deferred
// ("thinking…" for a command, nothing visible for a pressed button),
// the run's reply coming as a follow-up; or a message only its user sees
// when it cannot be taken.
func answer(ctx context.Context, cfg Config, conv *conversations, it *Interaction) any {
	in, err := conv.fromInteraction(ctx, it)
	if err != nil {
		cfg.log().Warn("discord interaction", "id", it.ID, "type", it.Type, "error", err)
		return ephemeral(unsupported)
	}
	var reply *string
	in.Answer = func(text string) bool {
		reply = &text
		return true
	}
	if err := cfg.Handle(ctx, in); err != nil {
		cfg.log().Error("discord: handle interaction", "id", it.ID, "error", err)
		return ephemeral(unavailable)
	}
	switch {
	case reply != nil:
		return interactionMessage{Type: callbackMessage, Data: messageBody{Content: *reply, AllowedMentions: allowedMentions{Parse: []string{}}}}
	case it.Type == interactionComponent:
		return map[string]int{"type": callbackDeferredUpdate}
	}
	return map[string]int{"type": callbackDeferredMessage}
}

// interactionMessage is an interaction's response with a message.
type interactionMessage struct {
	Type int         `json:"type"`
	Data messageBody `json:"data"`
}

// ephemeral is a message only the interaction's user sees.
func ephemeral(text string) map[string]any {
	return map[string]any{"type": callbackMessage, "data": map[string]any{"content": text, "flags": flagEphemeral}}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
