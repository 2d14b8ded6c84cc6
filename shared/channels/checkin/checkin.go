// Package checkin turns a scheduled check-in (an EventBridge Scheduler
// event on AWS) into a run of the user's session: the text becomes a user
// message, queued like any other and started when the session is idle.
package checkin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Event is the input of an EventBridge Scheduler check-in: the
// text becomes a user message to Agent in the session of User on Channel.
type Event struct {
	// ID, when set, makes the delivery idempotent: EventBridge Scheduler
	// delivers at least once, and the same ID names the same run. Put
	// <aws.scheduler.execution-id> in the schedule's input for it.
	ID string `json:"id,omitempty"`
	// Agent defaults to "default".
	Agent   string `json:"agent,omitempty"`
	User    string `json:"user"`
	Channel string `json:"channel"`
	// Key is the id of the API key whose session it is, required on the
	// channels where sessions belong to a key ("http" and "ws").
	Key string `json:"key,omitempty"`
	// To is the reply address on Channel (a Telegram chat id, …); User
	// when empty.
	To   string `json:"to,omitempty"`
	Text string `json:"text"`
	// Autonomy is the run's autonomy level; supervised when empty.
	Autonomy string `json:"autonomy,omitempty"`
}

// Result names the run a check-in queued.
type Result struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
}

// Channel is what the sessions a check-in starts are shown as made on.
const Channel = "checkin"

// Handler queues check-ins; it is the handler of the scheduler function.
type Handler struct {
	Loop     *agent.Loop
	Lane     agent.Lane
	Identity agent.Identity
}

// Handle queues the check-in as a run of the user's session and starts it
// when the session is idle; its replies go to the channel. Unlike a
// message from the user, a check-in never answers, nor denies, an approval
// the session waits for: it queues behind the parked run.
func (c *Handler) Handle(ctx context.Context, ev Event) (Result, error) {
	switch {
	case ev.User == "" || ev.Channel == "":
		return Result{}, errors.New("check-in: user and channel are required")
	case strings.TrimSpace(ev.Text) == "":
		return Result{}, errors.New("check-in: text is required")
	case ev.Key == "" && (ev.Channel == gateway.Channel || ev.Channel == wsproto.Channel):
		return Result{}, fmt.Errorf("check-in: channel %s needs the key whose session it is", ev.Channel)
	}
	autonomy := tool.Supervised
	if ev.Autonomy != "" {
		var err error
		if autonomy, err = tool.ParseAutonomy(ev.Autonomy); err != nil {
			return Result{}, fmt.Errorf("check-in: %w", err)
		}
	}
	name := cmp.Or(ev.Agent, wsproto.DefaultAgent)
	owner, sessionID := c.Identity.Session(name, identityChannel(ev.Channel), ev.Key, ev.User)
	in := agent.Input{
		SessionID: sessionID,
		Agent:     name,
		Owner:     owner,
		Messages:  []chat.Message{{Role: chat.User, Content: ev.Text}},
		Autonomy:  autonomy,
		Stream:    ev.Channel == wsproto.Channel,
		// Somebody reads every channel but the HTTP API's.
		Interactive: ev.Channel != gateway.Channel,
		Reply:       agent.Reply{Channel: ev.Channel, To: cmp.Or(ev.To, ev.User)},
		Channel:     Channel,
	}
	if ev.ID != "" {
		sum := sha256.Sum256([]byte("check-in\x00" + ev.ID))
		in.RunID = hex.EncodeToString(sum[:16])
	}
	st, err := c.Loop.Enqueue(ctx, in)
	if err != nil {
		return Result{}, fmt.Errorf("check-in: %w", err)
	}
	if err := c.Lane.Kick(ctx, st.SessionID); err != nil {
		return Result{}, fmt.Errorf("check-in: %w", err)
	}
	return Result{RunID: st.RunID, SessionID: st.SessionID}, nil
}

// identityChannel is the channel name session identities use: the HTTP
// API's sessions are "api" sessions.
func identityChannel(channel string) string {
	if channel == gateway.Channel {
		return "api"
	}
	return channel
}
