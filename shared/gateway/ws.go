package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wsproto"
)

// The /ws endpoint speaks the frames of package wsproto (its doc shows
// them); these constants bound its connections.
const (
	// wsPingInterval and wsPingTimeout keep idle connections alive through
	// proxies and notice dead peers.
	wsPingInterval = 30 * time.Second
	wsPingTimeout  = 15 * time.Second
	// wsWriteTimeout bounds one frame write to a slow client.
	wsWriteTimeout = 10 * time.Second
	// wsDeliverTimeout bounds handing one message to the loop. Delivery is
	// not cancelled with the connection, so that it never stops halfway.
	wsDeliverTimeout = 30 * time.Second
	// wsMaxQueued is how many bytes of frames may wait for a client that
	// reads too slowly before the connection is dropped.
	wsMaxQueued = 64 << 20
	// dedupSize is how many client message ids the gateway remembers.
	dedupSize = 1 << 16
)

// serveWS serves GET /ws. authed has checked the key and counted the
// upgrade against its rate limit.
func (g *Gateway) serveWS(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.wsMu.Lock()
	if g.wsClosed {
		g.wsMu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down")
		return
	}
	g.wsConns.Add(1)
	g.wsMu.Unlock()
	defer g.wsConns.Done()

	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	c.SetReadLimit(g.cfg.MaxBodyBytes)
	// The request's context ends with the handshake's connection; the
	// WebSocket lives on its own.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	wc := &wsConn{
		g: g, c: c, key: k, hash: apikey.Hash(token), id: agent.NewID(),
		keys: map[string]bool{}, cancel: cancel,
		out: outbox{notify: make(chan struct{}, 1)},
	}
	wc.addr = wsproto.Channel + ":" + wc.id
	wc.sub = g.cfg.Events.Subscribe(wc.addr)
	log := g.cfg.Log.With("conn_id", wc.id, "key_id", k.ID)
	log.Debug("websocket connected")

	var wg sync.WaitGroup
	wg.Go(func() { wc.write(ctx) })
	wg.Go(func() { wc.pump(ctx) })
	wg.Go(func() { wc.keepalive(ctx) })
	wg.Go(func() {
		select {
		case <-g.wsStop:
			c.Close(websocket.StatusGoingAway, "server shutting down")
		case <-ctx.Done():
		}
	})
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			log.Debug("websocket closed", "error", err)
			break
		}
		wc.handle(ctx, typ, data)
	}
	cancel()
	wg.Wait()
	c.CloseNow()
	wc.unsubscribeAll()
}

// Shutdown closes the WebSocket connections with status 1001 (going away)
// and waits until their handlers have returned or ctx ends. Call it when
// the HTTP server shuts down: http.Server.Shutdown does not track upgraded
// connections. Connections are refused afterwards.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.wsMu.Lock()
	if !g.wsClosed {
		g.wsClosed = true
		close(g.wsStop)
	}
	g.wsMu.Unlock()
	done := make(chan struct{})
	go func() {
		g.wsConns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("websocket connections still open: %w", ctx.Err())
	}
}

// wsConn is one WebSocket connection. The handler goroutine reads frames
// and handles them; a pump goroutine turns the runs' events into frames;
// one writer goroutine writes every frame.
type wsConn struct {
	g    *Gateway
	c    *websocket.Conn
	key  store.APIKey
	hash string
	id   string
	// addr is the reply address of the runs this connection starts.
	addr   string
	sub    *agent.Subscription
	out    outbox
	cancel context.CancelFunc

	// deliverMu is held while a message is delivered and acknowledged, and
	// by the pump while it queues an event, so a run's ack always precedes
	// its first event.
	deliverMu sync.Mutex

	mu   sync.Mutex
	keys map[string]bool // the run keys attached to sub
}

// handle answers one client frame.
func (wc *wsConn) handle(ctx context.Context, typ websocket.MessageType, data []byte) {
	f, bad := wsproto.Decode(data)
	if !wc.keyValid(ctx, f.ID) {
		return
	}
	g := wc.g
	if g.cfg.Limiter != nil {
		if ok, wait := g.cfg.Limiter.Allow(wc.key.ID, wc.key.RatePerMinute); !ok {
			secs := int((wait + time.Second - 1) / time.Second)
			wc.sendError(f.ID, "", "rate_limit_exceeded", fmt.Sprintf("rate limit of %d requests per minute reached; retry in %d s", wc.key.RatePerMinute, secs))
			return
		}
	}
	switch {
	case typ != websocket.MessageText:
		wc.sendError("", "", "invalid_frame", "send JSON text frames, not binary ones")
	case bad != nil:
		wc.send(*bad)
	case f.Type == wsproto.TypeMessage:
		wc.message(ctx, f)
	case f.Type == wsproto.TypeReset:
		wc.reset(ctx, f)
	}
}

// keyValid checks that the connection's key was not revoked since the
// connection opened; a revoked key's connection is closed.
func (wc *wsConn) keyValid(ctx context.Context, id string) bool {
	k, err := wc.g.cfg.Keys.KeyByHash(ctx, wc.hash)
	switch {
	case err == nil && k.RevokedAt == nil:
		wc.key = k // picks up changed limits and autonomy
		return true
	case err != nil && !errors.Is(err, store.ErrNotFound):
		wc.g.cfg.Log.Error("key lookup failed", "error", err)
		wc.sendError(id, "", "internal_error", "could not check the API key")
		return false
	}
	wc.sendError(id, "", "invalid_api_key", "the API key was revoked")
	wc.out.close(websocket.StatusPolicyViolation, "API key revoked")
	return false
}

// target resolves the agent, user, owner and session a frame is about.
// The user is one of the key's: the session belongs to the key.
func (wc *wsConn) target(f wsproto.ClientFrame) (name, user, owner, sessionID string, ok bool) {
	agentName := cmp.Or(f.Agent, wsproto.DefaultAgent)
	name, ok = wc.g.agentFor(wc.key, agentName)
	if !ok {
		wc.sendError(f.ID, "", "model_not_found", fmt.Sprintf("the agent %q does not exist or this key may not use it", agentName))
		return "", "", "", "", false
	}
	user = cmp.Or(f.User, wc.key.ID)
	owner, sessionID = wc.g.cfg.Identity.Session(name, wsproto.Channel, wc.key.ID, user)
	return name, user, owner, sessionID, true
}

// message delivers a user's message. A client id seen before is
// acknowledged as a duplicate and delivers nothing; the connection then
// follows the run the id started.
func (wc *wsConn) message(ctx context.Context, f wsproto.ClientFrame) {
	g := wc.g
	name, user, owner, sessionID, ok := wc.target(f)
	if !ok {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wsDeliverTimeout)
	defer cancel()
	wc.deliverMu.Lock()
	defer wc.deliverMu.Unlock()

	var runID string
	var entry *dedupEntry
	if f.ID != "" {
		runID = wsproto.RunID(wc.key.ID, user, name, f.ID)
		var first bool
		entry, first = g.dedup.claim(ctx, runID)
		if entry == nil {
			return // the connection closed while waiting
		}
		if !first {
			wc.duplicate(dctx, f.ID, entry.runID, entry.sessionID)
			return
		}
		if g.cfg.Runs != nil {
			run, err := g.cfg.Runs.GetRun(dctx, runID)
			if err == nil {
				st, err := agent.DecodeState(run)
				if err == nil {
					g.dedup.settle(runID, entry, st.RunID, st.SessionID, true)
					wc.duplicate(dctx, f.ID, st.RunID, st.SessionID)
					return
				}
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				g.dedup.settle(runID, entry, "", "", false)
				g.cfg.Log.Error("look up run", "run_id", runID, "error", err)
				wc.sendError(f.ID, "", "internal_error", "could not start the run")
				return
			}
		}
	}
	in := agent.Input{
		RunID: runID, SessionID: sessionID, Agent: name, Owner: owner,
		Messages: []chat.Message{{Role: chat.User, Content: f.Text}},
		Autonomy: autonomyOf(wc.key), Stream: true, Interactive: true,
		Reply: agent.Reply{Channel: wsproto.Channel, To: wc.addr},
	}
	st, err := g.cfg.Runner.Deliver(dctx, in, wc.attach)
	if err != nil {
		if entry != nil {
			g.dedup.settle(runID, entry, "", "", false)
		}
		if errors.Is(err, agent.ErrUnknownAgent) {
			wc.sendError(f.ID, "", "model_not_found", err.Error())
			return
		}
		if errors.Is(err, agent.ErrMayNotApprove) {
			wc.sendError(f.ID, "", "permission_denied", err.Error())
			return
		}
		g.cfg.Log.Error("deliver message", "conn_id", wc.id, "error", err)
		wc.sendError(f.ID, "", "internal_error", "could not start the run")
		return
	}
	if entry != nil {
		g.dedup.settle(runID, entry, st.RunID, st.SessionID, true)
	}
	wc.send(wsproto.Ack{Type: wsproto.TypeAck, ID: f.ID, RunID: st.RunID, SessionID: st.SessionID})
}

// duplicate acknowledges a repeated client id and follows its run, unless
// the store says it has ended.
func (wc *wsConn) duplicate(ctx context.Context, clientID, runID, sessionID string) {
	follow := true
	if wc.g.cfg.Runs != nil {
		if run, err := wc.g.cfg.Runs.GetRun(ctx, runID); err == nil && (run.Status == store.RunDone || run.Status == store.RunFailed) {
			follow = false
		}
	}
	if follow {
		wc.attach(runID)
	}
	wc.send(wsproto.Ack{Type: wsproto.TypeAck, ID: clientID, RunID: runID, SessionID: sessionID, Duplicate: true})
}

// reset starts a conversation afresh.
func (wc *wsConn) reset(ctx context.Context, f wsproto.ClientFrame) {
	_, _, _, sessionID, ok := wc.target(f)
	if !ok {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wsDeliverTimeout)
	defer cancel()
	err := wc.g.cfg.Runner.Reset(dctx, sessionID)
	switch {
	case errors.Is(err, agent.ErrBusy):
		wc.sendError(f.ID, "", "busy", err.Error())
	case err != nil:
		wc.g.cfg.Log.Error("reset session", "session_id", sessionID, "error", err)
		wc.sendError(f.ID, "", "internal_error", "could not reset the conversation")
	default:
		wc.send(wsproto.Ack{Type: wsproto.TypeAck, ID: f.ID, SessionID: sessionID})
	}
}

// attach follows a run's events, also when the run replies elsewhere (a
// parked run started from another connection).
func (wc *wsConn) attach(runID string) {
	key := agent.RunKey(runID)
	wc.mu.Lock()
	wc.keys[key] = true
	wc.mu.Unlock()
	wc.g.cfg.Events.Attach(key, wc.sub)
}

// detach stops following a run that has ended.
func (wc *wsConn) detach(runID string) {
	key := agent.RunKey(runID)
	wc.mu.Lock()
	attached := wc.keys[key]
	delete(wc.keys, key)
	wc.mu.Unlock()
	if attached {
		wc.g.cfg.Events.Unsubscribe(key, wc.sub)
	}
}

func (wc *wsConn) unsubscribeAll() {
	wc.mu.Lock()
	keys := wc.keys
	wc.keys = map[string]bool{}
	wc.mu.Unlock()
	for k := range keys {
		wc.g.cfg.Events.Unsubscribe(k, wc.sub)
	}
	wc.g.cfg.Events.Unsubscribe(wc.addr, wc.sub)
}

// pump turns the events of the connection's runs into frames.
func (wc *wsConn) pump(ctx context.Context) {
	for {
		ev, err := wc.sub.Next(ctx)
		if err != nil {
			return
		}
		frame, ok := wsproto.EventFrame(ev)
		if !ok {
			continue
		}
		wc.deliverMu.Lock()
		wc.send(frame)
		wc.deliverMu.Unlock()
		if ev.Result != nil {
			wc.detach(ev.RunID)
		}
	}
}

// send queues a frame for the writer.
func (wc *wsConn) send(frame any) {
	b, err := json.Marshal(frame)
	if err != nil {
		wc.g.cfg.Log.Error("encode frame", "error", err)
		return
	}
	if !wc.out.push(b) {
		wc.g.cfg.Log.Warn("websocket client reads too slowly; closing", "conn_id", wc.id)
		wc.cancel()
	}
}

func (wc *wsConn) sendError(id, runID, code, msg string) {
	wc.send(wsproto.NewError(id, runID, code, msg))
}

// write is the connection's only writer of data frames.
func (wc *wsConn) write(ctx context.Context) {
	for {
		b, cl, err := wc.out.next(ctx)
		if err != nil {
			return
		}
		if cl != nil {
			wc.c.Close(cl.code, cl.reason)
			return
		}
		wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		err = wc.c.Write(wctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			wc.cancel()
			return
		}
	}
}

// keepalive pings the client; a client that does not answer is dropped.
func (wc *wsConn) keepalive(ctx context.Context) {
	t := time.NewTicker(wsPingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, wsPingTimeout)
		err := wc.c.Ping(pctx)
		cancel()
		if err != nil {
			wc.cancel()
			return
		}
	}
}

// outbox is the unbounded queue of frames waiting for the writer, up to
// wsMaxQueued bytes.
type outbox struct {
	mu     sync.Mutex
	frames [][]byte
	size   int
	closer *closeRequest
	notify chan struct{}
}

// closeRequest asks the writer to close the connection after the frames
// queued before it.
type closeRequest struct {
	code   websocket.StatusCode
	reason string
}

// push queues b; it reports false when too much is queued already.
func (o *outbox) push(b []byte) bool {
	o.mu.Lock()
	if o.size+len(b) > wsMaxQueued {
		o.mu.Unlock()
		return false
	}
	if o.closer == nil {
		o.frames = append(o.frames, b)
		o.size += len(b)
	}
	o.mu.Unlock()
	o.wake()
	return true
}

// close asks the writer to close the connection once the queued frames
// are written; later frames are dropped.
func (o *outbox) close(code websocket.StatusCode, reason string) {
	o.mu.Lock()
	if o.closer == nil {
		o.closer = &closeRequest{code, reason}
	}
	o.mu.Unlock()
	o.wake()
}

func (o *outbox) wake() {
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// next returns the next frame, or the close request once every frame is
// written, waiting until ctx ends.
func (o *outbox) next(ctx context.Context) ([]byte, *closeRequest, error) {
	for {
		o.mu.Lock()
		if len(o.frames) > 0 {
			b := o.frames[0]
			o.frames[0] = nil
			o.frames = o.frames[1:]
			o.size -= len(b)
			o.mu.Unlock()
			return b, nil, nil
		}
		cl := o.closer
		o.mu.Unlock()
		if cl != nil {
			return nil, cl, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-o.notify:
		}
	}
}

// dedup remembers which run recent client message ids delivered to, so
// that a repeated id delivers nothing new: not even an approval answer,
// which starts no run of its own, nor a message resent while its run is
// parked, which would otherwise deny the approval. Runs that outlive the
// memory (or the process) are found through Config.Runs.
type dedup struct {
	mu    sync.Mutex
	byID  map[string]*dedupEntry
	order []dedupKey // oldest first
}

type dedupKey struct {
	id string
	e  *dedupEntry
}

// dedupEntry is one remembered id; done is closed when its delivery has
// settled.
type dedupEntry struct {
	done             chan struct{}
	ok               bool
	runID, sessionID string
}

func newDedup() *dedup { return &dedup{byID: map[string]*dedupEntry{}} }

// claim returns the entry for id and whether the caller is the first to
// deliver it. A later caller waits until the first delivery settles; if it
// failed, the id may be delivered again. claim returns nil when ctx ends
// first.
func (d *dedup) claim(ctx context.Context, id string) (*dedupEntry, bool) {
	for {
		d.mu.Lock()
		e, seen := d.byID[id]
		if !seen {
			e = &dedupEntry{done: make(chan struct{})}
			d.byID[id] = e
			d.order = append(d.order, dedupKey{id, e})
			if len(d.order) > dedupSize {
				old := d.order[0]
				d.order = slices.Delete(d.order, 0, 1)
				if d.byID[old.id] == old.e {
					delete(d.byID, old.id)
				}
			}
			d.mu.Unlock()
			return e, true
		}
		d.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, false
		}
		if e.ok {
			return e, false
		}
	}
}

// settle records the outcome of the first delivery of id. A failed
// delivery forgets the id so that it can be retried.
func (d *dedup) settle(id string, e *dedupEntry, runID, sessionID string, ok bool) {
	d.mu.Lock()
	e.ok, e.runID, e.sessionID = ok, runID, sessionID
	if !ok && d.byID[id] == e {
		delete(d.byID, id)
	}
	d.mu.Unlock()
	close(e.done)
}
