package wsproto

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Conn is one client connection, as a transport provides it to the
// Server: the local /ws endpoint (shared/channels/gateway) and the API Gateway
// WebSocket function (shared/adapters/apigw) each implement it.
type Conn interface {
	// ID names the connection in logs.
	ID() string
	// Key returns the connection's API key as it is now, so that a key
	// revoked since the connection opened is noticed: store.ErrNotFound
	// once the key (or the connection's record of it) is gone.
	Key(ctx context.Context) (store.APIKey, error)
	// Send sends a frame to the client; the transport logs what it cannot
	// send.
	Send(frame any)
	// Close closes the connection once the frames sent before are out; the
	// Server closes the connection of a revoked key.
	Close(ctx context.Context)
	// Reply is the reply address of the runs the connection starts.
	Reply() agent.Reply
	// Deliver hands a message to the agent loop (agent.Loop.Deliver) and
	// makes the connection follow the run that answers, also a parked run
	// that an approval answer resumes.
	Deliver(ctx context.Context, in agent.Input) (agent.RunState, error)
	// Start is called once the ack of a delivered message is sent. A
	// transport that cannot otherwise keep a run's frames behind its ack
	// starts the run only now; an error means the run did not start.
	Start(ctx context.Context) error
	// Follow is told the run of a repeated client id that is still going,
	// so that the connection can follow its frames.
	Follow(ctx context.Context, runID string)
	// Reset starts a session afresh; agent.ErrBusy while it has work.
	Reset(ctx context.Context, sessionID string) error
}

// Limiter is a per-key rate limiter.
type Limiter interface {
	Allow(key string, limit int) (bool, time.Duration)
}

// RunFinder looks runs up by id.
type RunFinder interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
}

// Server is the server's side of the protocol: it answers the client
// frames of every connection, whatever carries them. Per frame it checks
// the connection's key (a revoked key closes the connection) and the key's
// rate limit, decodes the frame, and delivers a message or resets a
// session of the key's user with an agent the key may use.
//
// A message with a client id names its run (RunID), so that the same id
// sent again, also on another connection or after a restart, delivers
// nothing: it is acknowledged as a duplicate, and the connection follows
// the run if it is still going. The run is looked up in Runs, and first in
// Recent when the server keeps one.
type Server struct {
	// HasAgent says whether an agent exists. Required.
	HasAgent func(name string) bool
	// Identity derives the owner and session of a connection's user.
	Identity agent.Identity
	// Limiter, when set, counts every frame against its key's rate limit.
	Limiter Limiter
	// Runs, when set, finds the runs of client ids delivered before.
	Runs RunFinder
	// Recent, when set, remembers the runs of recent client ids in memory:
	// also those that start no run of their own (an approval answer), and
	// ids whose first delivery is still under way, which a repeat waits
	// for.
	Recent *Recent
	// Log receives the failures clients are told about only generically.
	Log *slog.Logger
}

// Handle answers one client frame; binary says the transport received it
// as a binary frame.
func (s *Server) Handle(ctx context.Context, c Conn, data []byte, binary bool) {
	f, bad := Decode(data)
	k, err := c.Key(ctx)
	if err == nil && k.RevokedAt != nil {
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.Send(NewError(f.ID, "", "invalid_api_key", "the API key was revoked"))
		c.Close(ctx)
		return
	case err != nil:
		s.log().Error("key lookup failed", "conn_id", c.ID(), "error", err)
		c.Send(NewError(f.ID, "", "internal_error", "could not check the API key"))
		return
	}
	if s.Limiter != nil {
		if ok, wait := s.Limiter.Allow(k.ID, k.RatePerMinute); !ok {
			secs := int((wait + time.Second - 1) / time.Second)
			c.Send(NewError(f.ID, "", "rate_limit_exceeded", fmt.Sprintf("rate limit of %d requests per minute reached; retry in %d s", k.RatePerMinute, secs)))
			return
		}
	}
	switch {
	case binary:
		c.Send(NewError("", "", "invalid_frame", "send JSON text frames, not binary ones"))
	case bad != nil:
		c.Send(*bad)
	case f.Type == TypeMessage:
		s.message(ctx, c, k, f)
	case f.Type == TypeReset:
		s.reset(ctx, c, k, f)
	}
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// target is what a frame is about: an agent and a user of the key, and
// their session.
type target struct {
	agent, user, owner, sessionID string
}

// target resolves a frame's target, or answers model_not_found. The user
// is one of the key's: the session belongs to the key.
func (s *Server) target(c Conn, k store.APIKey, f ClientFrame) (target, bool) {
	asked := cmp.Or(f.Agent, DefaultAgent)
	name := strings.TrimPrefix(asked, "lambdaclaw/")
	if !k.Allows(name) || !s.HasAgent(name) {
		c.Send(NewError(f.ID, "", "model_not_found", fmt.Sprintf("the agent %q does not exist or this key may not use it", asked)))
		return target{}, false
	}
	t := target{agent: name, user: cmp.Or(f.User, k.ID)}
	t.owner, t.sessionID = s.Identity.Session(name, Channel, k.ID, t.user)
	return t, true
}

// message delivers a user's message, unless its client id was delivered
// before.
func (s *Server) message(ctx context.Context, c Conn, k store.APIKey, f ClientFrame) {
	t, ok := s.target(c, k, f)
	if !ok {
		return
	}
	autonomy, err := tool.ParseAutonomy(k.Autonomy)
	if err != nil {
		autonomy = tool.ReadOnly // the safest
	}
	in := agent.Input{
		SessionID: t.sessionID, Agent: t.agent, Owner: t.owner,
		Messages: []chat.Message{{Role: chat.User, Content: f.Text}},
		Autonomy: autonomy, Stream: true, Interactive: true, Reply: c.Reply(), Key: agent.RulesOf(k),
	}
	var held *recentEntry
	if f.ID != "" {
		in.RunID = RunID(k.ID, t.user, t.agent, f.ID)
		var done bool
		if held, done = s.recall(ctx, c, f.ID, in.RunID); done {
			return
		}
	}
	st, err := c.Deliver(ctx, in)
	s.Recent.settle(in.RunID, held, st.RunID, st.SessionID, err == nil)
	switch {
	case errors.Is(err, agent.ErrUnknownAgent):
		c.Send(NewError(f.ID, "", "model_not_found", err.Error()))
		return
	case errors.Is(err, agent.ErrMayNotApprove):
		c.Send(NewError(f.ID, "", "permission_denied", err.Error()))
		return
	case errors.Is(err, store.ErrStorageFull):
		s.log().Error("deliver message: storage full", "conn_id", c.ID(), "error", err)
		c.Send(NewError(f.ID, "", agent.CodeStorageFull, agent.StorageFullMessage))
		return
	case err != nil:
		s.log().Error("deliver message", "conn_id", c.ID(), "error", err)
		c.Send(NewError(f.ID, "", "internal_error", "could not start the run"))
		return
	}
	c.Send(Ack{Type: TypeAck, ID: f.ID, RunID: st.RunID, SessionID: st.SessionID})
	if err := c.Start(ctx); err != nil {
		// The message is stored; the session's next run or message starts it.
		s.log().Error("start run", "conn_id", c.ID(), "run_id", st.RunID, "error", err)
		c.Send(NewError(f.ID, st.RunID, "internal_error", "the message is queued but its run could not start yet; it starts with the conversation's next message"))
	}
}

// recall looks for an earlier delivery of the client id that names runID,
// first in Recent, then in Runs. It answers a repeated id (done) and
// otherwise returns the Recent entry this delivery holds until it settles
// (nil without Recent).
func (s *Server) recall(ctx context.Context, c Conn, clientID, runID string) (held *recentEntry, done bool) {
	if s.Recent != nil {
		e, first := s.Recent.claim(ctx, runID)
		if e == nil {
			return nil, true // the context ended while the id's first delivery was under way
		}
		if !first {
			s.duplicate(ctx, c, clientID, e.runID, e.sessionID, nil)
			return nil, true
		}
		held = e
	}
	if s.Runs == nil {
		return held, false
	}
	run, err := s.Runs.GetRun(ctx, runID)
	switch {
	case err == nil:
		s.Recent.settle(runID, held, run.ID, run.SessionID, true)
		s.duplicate(ctx, c, clientID, run.ID, run.SessionID, &run)
		return nil, true
	case !errors.Is(err, store.ErrNotFound):
		s.Recent.settle(runID, held, "", "", false)
		s.log().Error("look up run", "run_id", runID, "error", err)
		c.Send(NewError(clientID, "", "internal_error", "could not start the run"))
		return nil, true
	}
	return held, false
}

// duplicate acknowledges a repeated client id and follows its run, unless
// the run has ended. run is the run as stored, when known.
func (s *Server) duplicate(ctx context.Context, c Conn, clientID, runID, sessionID string, run *store.Run) {
	if run == nil && s.Runs != nil {
		if r, err := s.Runs.GetRun(ctx, runID); err == nil {
			run = &r
		}
	}
	if run == nil || (run.Status != store.RunDone && run.Status != store.RunFailed) {
		c.Follow(ctx, runID)
	}
	c.Send(Ack{Type: TypeAck, ID: clientID, RunID: runID, SessionID: sessionID, Duplicate: true})
}

// reset starts a conversation afresh.
func (s *Server) reset(ctx context.Context, c Conn, k store.APIKey, f ClientFrame) {
	t, ok := s.target(c, k, f)
	if !ok {
		return
	}
	err := c.Reset(ctx, t.sessionID)
	switch {
	case errors.Is(err, agent.ErrBusy):
		c.Send(NewError(f.ID, "", "busy", err.Error()))
	case err != nil:
		s.log().Error("reset session", "session_id", t.sessionID, "error", err)
		c.Send(NewError(f.ID, "", "internal_error", "could not reset the conversation"))
	default:
		c.Send(Ack{Type: TypeAck, ID: f.ID, SessionID: t.sessionID})
	}
}
