package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Loop takes messages in; *agent.Loop implements it.
type Loop interface {
	Deliver(ctx context.Context, in agent.Input, lane agent.Lane, subscribe func(runID string)) (agent.RunState, error)
	// Reset starts a session afresh; agent.ErrBusy while it has work.
	Reset(ctx context.Context, sessionID string) error
}

// Connections remembers which API key opened each connection, and
// indexes connections by the sessions their users talk in, for the
// check-ins delivered to those users (CheckIns).
type Connections interface {
	PutConnection(ctx context.Context, id, keyHash string, ttl time.Duration) error
	// Connection returns the hash of the key connection id was opened
	// with and the sessions it is indexed under; store.ErrNotFound once
	// it is gone.
	Connection(ctx context.Context, id string) (keyHash string, sessions []string, err error)
	// JoinSession indexes connection id under owner's session for ttl;
	// joining again, or beyond limit sessions, changes nothing.
	JoinSession(ctx context.Context, id, owner, sessionID string, limit int, ttl time.Duration) error
	// DeleteConnection forgets the connection and its index entries.
	DeleteConnection(ctx context.Context, id string) error
}

// Keys looks API keys up by hash.
type Keys interface {
	KeyByHash(ctx context.Context, hash string) (store.APIKey, error)
}

// Runs reads and updates runs.
type Runs interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	CommitRun(ctx context.Context, c store.Commit) error
}

// Limiter is a per-key rate limiter.
type Limiter interface {
	Allow(key string, limit int) (bool, time.Duration)
}

// ConnectionTTL is how long a connection's record lives: API Gateway
// closes every WebSocket connection after two hours.
const ConnectionTTL = 2*time.Hour + 5*time.Minute

// MaxConnectionSessions bounds the sessions one connection is indexed
// under for check-ins: a connection that talks as more users, or with
// more agents, gets the check-ins of its first ones only (the local /ws
// keeps 64).
const MaxConnectionSessions = 16

// WebSocket handles the events of an API Gateway WebSocket API whose
// $connect, $disconnect and $default routes invoke one function. It speaks
// the protocol of the local /ws endpoint (package wsproto):
//
//   - $connect checks the API key, sent as "Authorization: Bearer <key>"
//     or, since browsers cannot set headers on a WebSocket, as a
//     subprotocol (wsproto.KeyFromProtocols; the answer selects
//     wsproto.Subprotocol) or the query parameter key; an unknown or
//     revoked key is refused with 401, a key over its rate limit with 429. The connection is recorded with its
//     key's hash.
//   - $default takes one client frame, which a wsproto.Server answers over
//     the connection (conn): the key recorded at $connect is looked up
//     again, so a revoked key's connection is closed. A message is
//     delivered to the Loop with the reply address {ws, connection id};
//     the ack, and the frames of errors, are posted to the connection; the
//     run's own frames come from the step function's Replier. The Lane (the
//     Step Functions driver) starts or resumes the run only once the ack is
//     posted, so that the ack comes first, as on the local /ws. The first
//     message delivered for a session indexes the connection under it
//     (Connections.JoinSession), as the local /ws joins the session, so
//     that check-ins to the session's user reach it (CheckIns).
//   - $disconnect forgets the connection and its index entries.
//
// Repeated client ids are found in Runs; their runs keep replying where
// they do. An approval answered from another connection than the run's
// moves the run's replies to the answering connection.
type WebSocket struct {
	Loop        Loop
	Lane        agent.Lane
	Keys        Keys
	Connections Connections
	Runs        Runs
	Conns       Conns
	// HasAgent says whether an agent exists.
	HasAgent func(name string) bool
	Identity agent.Identity
	// Limiter, when set, counts connections and frames per key.
	Limiter Limiter
	Log     *slog.Logger
}

// Handle is the Lambda handler.
func (ws *WebSocket) Handle(ctx context.Context, ev events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	id := ev.RequestContext.ConnectionID
	if id == "" {
		return status(http.StatusBadRequest, "no connection id"), nil
	}
	switch ev.RequestContext.RouteKey {
	case "$connect":
		return ws.connect(ctx, id, ev), nil
	case "$disconnect":
		if err := ws.Connections.DeleteConnection(ctx, id); err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		return status(http.StatusOK, ""), nil
	default:
		ws.frame(ctx, id, ev)
		return status(http.StatusOK, ""), nil
	}
}

func status(code int, body string) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: code, Body: body}
}

func (ws *WebSocket) log() *slog.Logger {
	if ws.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return ws.Log
}

// Header returns the named header of an API Gateway event, whatever its
// case, from its single- or multi-value headers.
func Header(single map[string]string, multi map[string][]string, name string) string {
	for k, v := range single {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, v := range multi {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// connect authenticates a new connection.
func (ws *WebSocket) connect(ctx context.Context, id string, ev events.APIGatewayWebsocketProxyRequest) events.APIGatewayProxyResponse {
	token, ok := strings.CutPrefix(Header(ev.Headers, ev.MultiValueHeaders, "Authorization"), "Bearer ")
	var protocol map[string]string
	if !ok || token == "" {
		if k, found := wsproto.KeyFromProtocols([]string{Header(ev.Headers, ev.MultiValueHeaders, "Sec-WebSocket-Protocol")}); found {
			token, protocol = k, map[string]string{"Sec-WebSocket-Protocol": wsproto.Subprotocol}
		} else {
			token = ev.QueryStringParameters["key"]
		}
	}
	if token == "" {
		return status(http.StatusUnauthorized, "missing API key: send Authorization: Bearer <key>, or the query parameter key")
	}
	hash := apikey.Hash(token)
	k, err := ws.key(ctx, token, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return status(http.StatusUnauthorized, "invalid API key")
	case err != nil:
		ws.log().Error("key lookup failed", "error", err)
		return status(http.StatusInternalServerError, "could not check the API key")
	}
	if ws.Limiter != nil {
		if ok, _ := ws.Limiter.Allow(k.ID, k.RatePerMinute); !ok {
			return status(http.StatusTooManyRequests, fmt.Sprintf("rate limit of %d requests per minute reached", k.RatePerMinute))
		}
	}
	if err := ws.Connections.PutConnection(ctx, id, hash, ConnectionTTL); err != nil {
		ws.log().Error("record connection", "conn_id", id, "error", err)
		return status(http.StatusInternalServerError, "could not open the connection")
	}
	ws.log().Debug("websocket connected", "conn_id", id, "key_id", k.ID)
	ok200 := status(http.StatusOK, "")
	ok200.Headers = protocol
	return ok200
}

// key returns the live key with hash; store.ErrNotFound for an unknown or
// revoked one. token, when set, is checked for plausibility first.
func (ws *WebSocket) key(ctx context.Context, token, hash string) (store.APIKey, error) {
	if token != "" && !apikey.Plausible(token) {
		return store.APIKey{}, store.ErrNotFound
	}
	k, err := ws.Keys.KeyByHash(ctx, hash)
	if err == nil && k.RevokedAt != nil {
		err = store.ErrNotFound
	}
	return k, err
}

// frame answers one client frame.
func (ws *WebSocket) frame(ctx context.Context, id string, ev events.APIGatewayWebsocketProxyRequest) {
	srv := wsproto.Server{
		HasAgent: ws.HasAgent,
		Identity: ws.Identity, Limiter: ws.Limiter, Runs: ws.Runs, Log: ws.log(),
	}
	srv.Handle(ctx, &conn{ws: ws, id: id}, []byte(ev.Body), ev.IsBase64Encoded)
}

// conn is one connection while a $default event of it is answered; it
// implements wsproto.Conn.
type conn struct {
	ws *WebSocket
	id string
	// sessions are those the connection is indexed under, as Key read
	// them.
	sessions []string
	// later holds back the lane's work until the ack is posted.
	later laterLane
}

var _ wsproto.Conn = (*conn)(nil)

// ID implements wsproto.Conn.
func (c *conn) ID() string { return c.id }

// Key implements wsproto.Conn: the key is the one recorded at $connect,
// looked up again.
func (c *conn) Key(ctx context.Context) (store.APIKey, error) {
	hash, sessions, err := c.ws.Connections.Connection(ctx, c.id)
	if err != nil {
		return store.APIKey{}, err
	}
	c.sessions = sessions
	return c.ws.key(ctx, "", hash)
}

// Send implements wsproto.Conn: the frame is posted to the connection.
func (c *conn) Send(frame any) {
	if err := c.ws.Conns.Send(context.Background(), c.id, frame); err != nil && !errors.Is(err, ErrGone) {
		c.ws.log().Warn("websocket frame not delivered", "conn_id", c.id, "error", err)
	}
}

// Close implements wsproto.Conn.
func (c *conn) Close(ctx context.Context) {
	if err := c.ws.Conns.Close(ctx, c.id); err != nil {
		c.ws.log().Warn("close connection", "conn_id", c.id, "error", err)
	}
}

// Reply implements wsproto.Conn: runs reply to the connection id.
func (c *conn) Reply() agent.Reply { return agent.Reply{Channel: wsproto.Channel, To: c.id} }

// Deliver implements wsproto.Conn: what the loop asks of the lane is held
// back until Start, and a parked run that the message answers moves its
// replies to this connection. A delivered message indexes the connection
// under its session, once, up to MaxConnectionSessions: a connection not
// indexed only misses check-ins.
func (c *conn) Deliver(ctx context.Context, in agent.Input) (agent.RunState, error) {
	st, err := c.ws.Loop.Deliver(ctx, in, &c.later, func(runID string) { c.ws.follow(ctx, runID, in.Reply) })
	if err == nil && !slices.Contains(c.sessions, st.SessionID) && len(c.sessions) < MaxConnectionSessions {
		if err := c.ws.Connections.JoinSession(ctx, c.id, in.Owner, st.SessionID, MaxConnectionSessions, ConnectionTTL); err != nil {
			c.ws.log().Warn("index the connection for check-ins", "conn_id", c.id, "error", err)
		}
	}
	return st, err
}

// Start implements wsproto.Conn: the Lane starts or resumes the run now
// that the ack is posted, so that the ack comes first.
func (c *conn) Start(ctx context.Context) error { return c.later.run(ctx, c.ws.Lane) }

// Follow implements wsproto.Conn: a repeated message's run keeps replying
// where it does.
func (c *conn) Follow(context.Context, string) {}

// Reset implements wsproto.Conn.
func (c *conn) Reset(ctx context.Context, sessionID string) error {
	return c.ws.Loop.Reset(ctx, sessionID)
}

// laterLane records what the loop asks of the lane during Deliver, to be
// done after the ack is posted.
type laterLane struct {
	resume *store.Approval
	kick   string
}

func (l *laterLane) Resume(_ context.Context, ap store.Approval) error {
	l.resume = &ap
	return nil
}

func (l *laterLane) Kick(_ context.Context, sessionID string) error {
	l.kick = sessionID
	return nil
}

// run does what was recorded, in the order Deliver asks it: a resume
// before a kick.
func (l *laterLane) run(ctx context.Context, lane agent.Lane) error {
	if l.resume != nil {
		if err := lane.Resume(ctx, *l.resume); err != nil {
			return err
		}
	}
	if l.kick != "" {
		return lane.Kick(ctx, l.kick)
	}
	return nil
}

// follow sends the replies of a parked run, about to be resumed by this
// connection's answer, to this connection. Only a parked run is changed:
// nothing else writes it until it is resumed, which happens after this.
func (ws *WebSocket) follow(ctx context.Context, runID string, reply agent.Reply) {
	run, err := ws.Runs.GetRun(ctx, runID)
	if err != nil {
		return // a new run, not written yet
	}
	st, err := agent.DecodeState(run)
	if err != nil || !st.Parked() || run.Status != store.RunRunning || st.Reply == reply {
		return
	}
	st.Reply = reply
	run.UpdatedAt = time.Now().UTC()
	if run.State, err = json.Marshal(st); err == nil {
		err = ws.Runs.CommitRun(ctx, store.Commit{Run: run})
	}
	if err != nil {
		ws.log().Warn("move the replies of a parked run", "run_id", runID, "error", err)
	}
}
