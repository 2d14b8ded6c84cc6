package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Socket receives Slack's deliveries over Socket Mode
// (api.slack.com/apis/socket-mode), for an install without a public URL:
// it asks apps.connections.open for a WebSocket URL with the app-level
// token, reads the envelopes Slack sends there, hands their events and
// button presses to the Receiver and acknowledges each once handed over
// (an envelope not acknowledged is delivered again). A disconnect
// message, Slack's periodic refresh, opens a new connection at once; a
// failure (or a disconnect because Socket Mode was turned off) waits
// Backoff first. A dead connection is found by TCP keep-alives (on in
// net/http's dialer).
type Socket struct {
	Client *Client
	// AppToken is the app-level token (xapp-, scope connections:write).
	AppToken string
	Receiver *Receiver
	// Backoff is the wait before the n-th attempt in a row after a
	// failure (n from 1); nil means 1 s doubling up to a minute.
	Backoff func(n int) time.Duration
}

// socketMsg is one message Slack sends over the connection.
type socketMsg struct {
	Type       string          `json:"type"`
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
	Reason     string          `json:"reason"`
}

func (s *Socket) backoff(n int) time.Duration {
	if s.Backoff != nil {
		return s.Backoff(n)
	}
	d := time.Second << min(n-1, 6)
	return min(d, time.Minute)
}

// Run connects and reconnects until ctx ends, or until Slack refuses the
// app token (a permanent error, returned).
func (s *Socket) Run(ctx context.Context) error {
	for failures := 0; ; {
		err := s.connect(ctx, func() { failures = 0 })
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ce *channel.Error
		if errors.As(err, &ce) && ce.Permanent {
			return fmt.Errorf("slack socket mode: %w", err)
		}
		if err == nil {
			continue // Slack asked for a new connection
		}
		failures++
		wait := s.backoff(failures)
		if ce != nil && ce.RetryAfter > wait {
			wait = ce.RetryAfter
		}
		s.Receiver.log().Warn("slack socket mode: reconnecting", "error", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// connect serves one connection until Slack disconnects it (nil) or it
// fails; hello is called when Slack greets it.
func (s *Socket) connect(ctx context.Context, hello func()) error {
	u, err := s.Client.OpenConnection(ctx, s.AppToken)
	if err != nil {
		return err
	}
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: s.Client.http})
	if err != nil {
		return fmt.Errorf("slack socket mode: dial: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxBody)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("slack socket mode: read: %w", err)
		}
		var m socketMsg
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("slack socket mode: bad message: %w", err)
		}
		switch m.Type {
		case "hello":
			hello()
			continue
		case "disconnect":
			conn.Close(websocket.StatusNormalClosure, "")
			if m.Reason == "link_disabled" {
				return errors.New("slack socket mode: Slack disabled the connection (is Socket Mode off?)")
			}
			return nil // a refresh: connect again at once
		}
		if m.EnvelopeID == "" {
			continue
		}
		after, err := s.deliver(ctx, m)
		if err != nil {
			// Not acknowledged: Slack delivers it again.
			s.Receiver.log().Error("slack socket mode: handle delivery", "type", m.Type, "error", err)
			continue
		}
		ack, _ := json.Marshal(map[string]string{"envelope_id": m.EnvelopeID})
		if err := conn.Write(ctx, websocket.MessageText, ack); err != nil {
			return fmt.Errorf("slack socket mode: ack: %w", err)
		}
		if after != nil {
			after()
		}
	}
}

// deliver hands an envelope's payload to the receiver; what it cannot
// read, or another workspace's, is acknowledged and dropped.
func (s *Socket) deliver(ctx context.Context, m socketMsg) (after func(), err error) {
	switch m.Type {
	case "events_api":
		_, err = s.Receiver.event(ctx, m.Payload)
	case "interactive":
		after, err = s.Receiver.interaction(ctx, m.Payload)
	}
	if errors.Is(err, errBadRequest) || errors.Is(err, errForeignTeam) {
		s.Receiver.log().Warn("slack socket mode: delivery dropped", "type", m.Type, "error", err)
		return nil, nil
	}
	return after, err
}
