package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Intents are the Gateway intents the channel asks for: messages in
// guilds (GUILD_MESSAGES) and in direct messages (DIRECT_MESSAGES), with
// their content (MESSAGE_CONTENT, a privileged intent the bot's page in
// the Developer Portal must allow).
const Intents = 1<<9 | 1<<12 | 1<<15

// Gateway close codes after which connecting again cannot help.
var fatalClose = map[websocket.StatusCode]string{
	4004: "authentication failed: check the bot token",
	4010: "invalid shard",
	4011: "sharding required",
	4012: "invalid API version",
	4013: "invalid intents",
	4014: "disallowed intents: allow the Message Content intent on the bot's page in the Developer Portal",
}

// Gateway close codes after which the session cannot be resumed.
var freshClose = map[websocket.StatusCode]bool{4007: true, 4009: true}

// KeyGatewaySession is the State key of the Gateway session.
const KeyGatewaySession = "gateway_session"

// State keeps small values (store.Channel).
type State interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// maxGatewayFrame bounds one Gateway message.
const maxGatewayFrame = 8 << 20

// maxQueued bounds the dispatches read but not yet handled.
const maxQueued = 256

// payload is a Gateway message.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// session is what resuming needs.
type session struct {
	ID        string `json:"session_id"`
	ResumeURL string `json:"resume_gateway_url"`
	Seq       int64  `json:"seq"`
}

// Gateway receives messages over Discord's Gateway WebSocket: direct
// messages, and guild messages (addressed when they mention the bot or
// reply to it); and interactions, where the application has no
// Interactions Endpoint URL. It heartbeats, resumes a dropped session
// (replaying what it missed) and identifies afresh when Discord says the
// session is gone.
type Gateway struct {
	cfg  Config
	conv conversations
	// MinDelay is the first wait before connecting again (default 1 s),
	// doubled up to a minute while connecting fails.
	MinDelay time.Duration

	mu      sync.Mutex
	self    string
	session session
	seq     atomic.Int64
	work    chan dispatch
}

// dispatch is an event to handle, with its sequence number.
type dispatch struct {
	t   string
	d   json.RawMessage
	seq int64
}

// NewGateway returns a Gateway; cfg needs Client and Handle.
func NewGateway(cfg Config) (*Gateway, error) {
	if cfg.Client == nil || cfg.Handle == nil {
		return nil, errors.New("discord: the gateway needs a client and a handler")
	}
	return &Gateway{cfg: cfg, conv: conversations{client: cfg.Client, download: cfg.Client.Download}, MinDelay: time.Second, work: make(chan dispatch, maxQueued)}, nil
}

// Self is the bot's user id, once READY told it.
func (g *Gateway) Self() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.self
}

// Run connects and receives until ctx is done, connecting again after a
// failure; it returns early only when Discord refuses the bot for good
// (a bad token, intents not allowed).
func (g *Gateway) Run(ctx context.Context) error {
	g.load(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); g.handleAll(ctx) }()
	defer func() { cancel(); <-done }()
	delay := g.MinDelay
	for {
		ready, err := g.connect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fe *fatalError
		if errors.As(err, &fe) {
			g.cfg.log().Error("discord gateway: giving up", "error", err)
			return err
		}
		if ready {
			delay = g.MinDelay
		}
		g.cfg.log().Warn("discord gateway: connecting again", "error", err, "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Minute)
	}
}

// fatalError is a refusal that connecting again cannot change.
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return "discord gateway: " + e.msg }

// load restores a session that a previous process kept.
func (g *Gateway) load(ctx context.Context) {
	if g.cfg.State == nil {
		return
	}
	v, err := g.cfg.State.State(ctx, KeyGatewaySession)
	if err != nil || v == "" {
		return
	}
	var s session
	if json.Unmarshal([]byte(v), &s) == nil && s.ID != "" && s.ResumeURL != "" {
		g.mu.Lock()
		g.session = s
		g.mu.Unlock()
		g.seq.Store(s.Seq)
	}
}

// save keeps the session with seq, the last event handled, so that a
// restarted process resumes after it.
func (g *Gateway) save(ctx context.Context, seq int64) {
	if g.cfg.State == nil {
		return
	}
	g.mu.Lock()
	s := g.session
	g.mu.Unlock()
	if s.ID == "" {
		return
	}
	s.Seq = seq
	b, _ := json.Marshal(s)
	if err := g.cfg.State.SetState(ctx, KeyGatewaySession, string(b)); err != nil {
		g.cfg.log().Warn("discord gateway: keep session", "error", err)
	}
}

// forget drops the session: the next connection identifies afresh.
func (g *Gateway) forget(ctx context.Context) {
	g.mu.Lock()
	g.session = session{}
	g.mu.Unlock()
	g.seq.Store(0)
	if g.cfg.State != nil {
		if err := g.cfg.State.SetState(ctx, KeyGatewaySession, ""); err != nil {
			g.cfg.log().Warn("discord gateway: forget session", "error", err)
		}
	}
}

// connect runs one connection until it fails; ready says it identified
// or resumed.
func (g *Gateway) connect(ctx context.Context) (ready bool, err error) {
	g.mu.Lock()
	s := g.session
	g.mu.Unlock()
	url := s.ResumeURL
	if s.ID == "" {
		if url, err = g.cfg.Client.GatewayURL(ctx); err != nil {
			var ce *channel.Error
			if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
				return false, &fatalError{msg: "the bot token is refused: " + err.Error()}
			}
			return false, err
		}
	}
	conn, _, err := websocket.Dial(ctx, strings.TrimRight(url, "/")+"/?v=10&encoding=json", nil)
	if err != nil {
		return false, fmt.Errorf("discord gateway: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxGatewayFrame)

	var hello struct {
		Interval int64 `json:"heartbeat_interval"`
	}
	p, err := read(ctx, conn)
	if err != nil {
		return false, g.closed(ctx, err)
	}
	if p.Op != opHello || json.Unmarshal(p.D, &hello) != nil || hello.Interval <= 0 {
		return false, fmt.Errorf("discord gateway: expected HELLO, got op %d", p.Op)
	}
	if s.ID != "" {
		err = write(ctx, conn, opResume, map[string]any{"token": g.cfg.Client.token, "session_id": s.ID, "seq": g.seq.Load()})
	} else {
		err = write(ctx, conn, opIdentify, map[string]any{
			"token": g.cfg.Client.token, "intents": Intents,
			"properties": map[string]string{"os": "linux", "browser": "lambdaclaw", "device": "lambdaclaw"},
		})
	}
	if err != nil {
		return false, fmt.Errorf("discord gateway: %w", err)
	}

	hctx, stop := context.WithCancel(ctx)
	defer stop()
	acked := make(chan struct{}, 1)
	beat := make(chan struct{}, 1)
	go g.heartbeat(hctx, conn, time.Duration(hello.Interval)*time.Millisecond, acked, beat)

	for {
		p, err := read(ctx, conn)
		if err != nil {
			return ready, g.closed(ctx, err)
		}
		if p.S != nil {
			g.seq.Store(*p.S)
		}
		switch p.Op {
		case opHeartbeatACK:
			select {
			case acked <- struct{}{}:
			default:
			}
		case opHeartbeat:
			select {
			case beat <- struct{}{}:
			default:
			}
		case opReconnect:
			conn.Close(websocket.StatusCode(4000), "reconnect")
			return ready, errors.New("discord gateway: asked to reconnect")
		case opInvalidSession:
			var resumable bool
			json.Unmarshal(p.D, &resumable)
			if !resumable {
				g.forget(ctx)
			}
			conn.Close(websocket.StatusCode(4000), "invalid session")
			return ready, fmt.Errorf("discord gateway: invalid session (resumable %t)", resumable)
		case opDispatch:
			switch p.T {
			case "READY":
				if err := g.ready(ctx, p.D); err != nil {
					return ready, err
				}
				ready = true
			case "RESUMED":
				ready = true
			case "MESSAGE_CREATE", "INTERACTION_CREATE":
				select {
				case g.work <- dispatch{t: p.T, d: p.D, seq: g.seq.Load()}:
				case <-ctx.Done():
					return ready, ctx.Err()
				}
			}
		}
	}
}

// ready records the session and the bot's user from READY.
func (g *Gateway) ready(ctx context.Context, d json.RawMessage) error {
	var r struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
		User      User   `json:"user"`
	}
	if err := json.Unmarshal(d, &r); err != nil || r.SessionID == "" || r.User.ID == "" {
		return errors.New("discord gateway: READY without session_id or user")
	}
	g.mu.Lock()
	g.self = r.User.ID
	g.session = session{ID: r.SessionID, ResumeURL: r.ResumeURL}
	g.mu.Unlock()
	g.save(ctx, g.seq.Load())
	return nil
}

// closed turns a failed read into the connection's end: fatal close
// codes stop the Gateway, those of a lost session make it identify
// afresh.
func (g *Gateway) closed(ctx context.Context, err error) error {
	code := websocket.CloseStatus(err)
	if msg, ok := fatalClose[code]; ok {
		return &fatalError{msg: fmt.Sprintf("closed %d: %s", code, msg)}
	}
	if freshClose[code] {
		g.forget(ctx)
	}
	return fmt.Errorf("discord gateway: %w", err)
}

// heartbeat sends a heartbeat every interval (the first after a random
// part of it, as Discord asks) and at once when Discord asks for one; a
// heartbeat not acknowledged before the next is due means the
// connection is dead, so it is dropped (and resumed).
func (g *Gateway) heartbeat(ctx context.Context, conn *websocket.Conn, interval time.Duration, acked, beat <-chan struct{}) {
	t := time.NewTimer(time.Duration(rand.Float64() * float64(interval)))
	defer t.Stop()
	waiting := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-acked:
			waiting = false
			continue
		case <-beat:
		case <-t.C:
			if waiting {
				g.cfg.log().Warn("discord gateway: heartbeat not acknowledged; reconnecting")
				conn.CloseNow()
				return
			}
			t.Reset(interval)
		}
		var seq any
		if n := g.seq.Load(); n > 0 {
			seq = n
		}
		if err := write(ctx, conn, opHeartbeat, seq); err != nil {
			return
		}
		waiting = true
	}
}

// maxHandleTries bounds the tries of handing one event over.
const maxHandleTries = 6

// handleAll hands the queued events to the engine, in order. An event
// the engine could not take is tried again, after MinDelay, then twice
// as long each time, up to maxHandleTries times: the Gateway delivers it
// only once (a restart resumes from the last event handled).
func (g *Gateway) handleAll(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-g.work:
			wait := g.MinDelay
			for try := 1; !g.handle(ctx, d); try++ {
				if try == maxHandleTries {
					g.cfg.log().Error("discord gateway: event dropped", "type", d.t, "seq", d.seq)
					break
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				wait *= 2
			}
			g.save(ctx, d.seq)
		}
	}
}

// handle converts and hands over one event; it reports whether the
// event is done with.
func (g *Gateway) handle(ctx context.Context, d dispatch) bool {
	log := g.cfg.log()
	if d.t == "INTERACTION_CREATE" {
		var it Interaction
		if err := json.Unmarshal(d.d, &it); err != nil {
			log.Warn("discord gateway: bad interaction", "error", err)
			return true
		}
		if err := g.cfg.Client.respond(ctx, it.ID, it.Token, answer(ctx, g.cfg, &g.conv, &it)); err != nil {
			log.Error("discord gateway: answer interaction", "id", it.ID, "error", err)
		}
		return true
	}
	var m Message
	if err := json.Unmarshal(d.d, &m); err != nil {
		log.Warn("discord gateway: bad message", "error", err)
		return true
	}
	in, ok, err := g.conv.fromMessage(ctx, &m, g.Self())
	if err != nil {
		log.Error("discord gateway: message", "id", m.ID, "error", err)
		return false
	}
	if !ok {
		return true
	}
	if err := g.cfg.Handle(ctx, in); err != nil {
		log.Error("discord gateway: handle message", "id", m.ID, "error", err)
		return false
	}
	return true
}

func read(ctx context.Context, conn *websocket.Conn) (payload, error) {
	_, b, err := conn.Read(ctx)
	if err != nil {
		return payload{}, err
	}
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return payload{}, fmt.Errorf("discord gateway: bad payload: %w", err)
	}
	return p, nil
}

func write(ctx context.Context, conn *websocket.Conn, op int, d any) error {
	b, err := json.Marshal(map[string]any{"op": op, "d": d})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}
