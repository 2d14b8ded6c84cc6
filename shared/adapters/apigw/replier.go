package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Management is the part of the API Gateway Management API lambdaclaw
// uses; *awsapi.APIGatewayManagement implements it.
type Management interface {
	PostToConnection(ctx context.Context, id string, data []byte) error
	DeleteConnection(ctx context.Context, id string) error
}

// postTimeout bounds one PostToConnection.
const postTimeout = 5 * time.Second

// ErrGone is returned for a connection that is closed.
var ErrGone = errors.New("the WebSocket connection is gone")

// Conns sends frames to the connections of a WebSocket API.
type Conns struct {
	API Management
	Log *slog.Logger
}

// Send posts frame, encoded as JSON, to the connection id. A closed
// connection gives an error wrapping ErrGone.
func (c Conns) Send(ctx context.Context, id string, frame any) error {
	b, err := json.Marshal(frame)
	if err != nil {
		return fmt.Errorf("apigw: encode frame: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	err = c.API.PostToConnection(ctx, id, b)
	if gone(err) {
		return fmt.Errorf("apigw: post to %s: %w", id, ErrGone)
	}
	if err != nil {
		return fmt.Errorf("apigw: post to %s: %w", id, err)
	}
	return nil
}

func (c Conns) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// Close closes the connection id; a connection already gone is no error.
func (c Conns) Close(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	if err := c.API.DeleteConnection(ctx, id); err != nil && !gone(err) {
		return fmt.Errorf("apigw: close %s: %w", id, err)
	}
	return nil
}

// gone reports whether err says the connection is closed.
func gone(err error) bool { return awsapi.HasCode(err, "GoneException") }

// Replier is the agent.Replier of runs that answer a WebSocket client
// (Reply.Channel "ws", Reply.To the API Gateway connection id): it posts
// the frames the local /ws endpoint writes (package wsproto), one
// PostToConnection per event. A client that went away loses the frames;
// the run goes on and its answer stays in the session's history.
type Replier struct{ Conns Conns }

var _ agent.Replier = Replier{}

// Delta implements agent.Replier.
func (r Replier) Delta(st agent.RunState, text string) { r.post(st, agent.Event{Delta: text}) }

// Approval implements agent.Replier.
func (r Replier) Approval(st agent.RunState, a store.Approval) {
	r.post(st, agent.Event{Approval: &a})
}

// Finish implements agent.Replier.
func (r Replier) Finish(st agent.RunState, res agent.Result) { r.post(st, agent.Event{Result: &res}) }

func (r Replier) post(st agent.RunState, ev agent.Event) {
	ev.RunID, ev.SessionID = st.RunID, st.SessionID
	frame, ok := wsproto.EventFrame(ev)
	if !ok || st.Reply.To == "" {
		return
	}
	err := r.Conns.Send(context.Background(), st.Reply.To, frame)
	if err != nil {
		level := slog.LevelWarn
		if errors.Is(err, ErrGone) {
			level = slog.LevelDebug
		}
		r.Conns.log().Log(context.Background(), level, "websocket reply not delivered", "run_id", st.RunID, "error", err)
	}
}
