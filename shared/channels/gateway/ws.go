package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
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
	// wsDeliverTimeout bounds handing one message, or a reset, to the loop.
	// Neither is cancelled with the connection, so that it never stops
	// halfway.
	wsDeliverTimeout = 30 * time.Second
	// wsMaxQueued is how many bytes of frames may wait for a client that
	// reads too slowly before the connection is dropped.
	wsMaxQueued = 64 << 20
	// dedupSize is how many client message ids the gateway remembers
	// (wsproto.Recent).
	dedupSize = 1 << 16
)

// serveWS serves GET /ws. authed has checked the key and counted the
// upgrade against its rate limit.
func (g *Gateway) serveWS(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	token, _ := bearer(r)
	g.wsMu.Lock()
	if g.wsClosed {
		g.wsMu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down")
		return
	}
	g.wsConns.Add(1)
	g.wsMu.Unlock()
	defer g.wsConns.Done()

	// A browser that offered its key as a subprotocol gets
	// wsproto.Subprotocol back (never the key); other clients get none.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wsproto.Subprotocol}})
	if err != nil {
		return // Accept has answered
	}
	c.SetReadLimit(g.cfg.MaxBodyBytes)
	// The request's context ends with the handshake's connection; the
	// WebSocket lives on its own.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	wc := &wsConn{
		g: g, c: c, hash: apikey.Hash(token), id: agent.NewID(),
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

// wsConn is one WebSocket connection; it implements wsproto.Conn. The
// handler goroutine reads frames and has the gateway's wsproto.Server
// answer them; a pump goroutine turns the runs' events into frames; one
// writer goroutine writes every frame.
type wsConn struct {
	g    *Gateway
	c    *websocket.Conn
	hash string
	id   string
	// addr is the reply address of the runs this connection starts.
	addr   string
	sub    *agent.Subscription
	out    outbox
	cancel context.CancelFunc

	// frameMu is held while a frame is answered, and by the pump while it
	// queues an event, so that a run's ack always precedes its first event.
	frameMu sync.Mutex

	mu   sync.Mutex
	keys map[string]bool // the run keys attached to sub
	// sessions are the sessions the connection talks in (under
	// Gateway.wsMu), at most wsMaxSessions.
	sessions []string
}

var _ wsproto.Conn = (*wsConn)(nil)

// handle answers one client frame.
func (wc *wsConn) handle(ctx context.Context, typ websocket.MessageType, data []byte) {
	wc.frameMu.Lock()
	defer wc.frameMu.Unlock()
	wc.g.ws.Handle(ctx, wc, data, typ != websocket.MessageText)
}

// ID implements wsproto.Conn.
func (wc *wsConn) ID() string { return wc.id }

// Key implements wsproto.Conn: the key is looked up again by its hash.
func (wc *wsConn) Key(ctx context.Context) (store.APIKey, error) {
	return wc.g.cfg.Keys.KeyByHash(ctx, wc.hash)
}

// Close implements wsproto.Conn: the connection closes with status 1008.
func (wc *wsConn) Close(context.Context) {
	wc.out.close(websocket.StatusPolicyViolation, "API key revoked")
}

// Reply implements wsproto.Conn.
func (wc *wsConn) Reply() agent.Reply {
	return agent.Reply{Channel: wsproto.Channel, To: wc.addr}
}

// Deliver implements wsproto.Conn: the connection attaches to the run that
// answers.
func (wc *wsConn) Deliver(ctx context.Context, in agent.Input) (agent.RunState, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wsDeliverTimeout)
	defer cancel()
	st, err := wc.g.cfg.Runner.Deliver(ctx, in, wc.attach)
	if err == nil {
		wc.g.joinSession(wc, st.SessionID)
	}
	return st, err
}

// Start implements wsproto.Conn: frameMu keeps the run's events behind its
// ack, so there is nothing left to start.
func (wc *wsConn) Start(context.Context) error { return nil }

// Follow implements wsproto.Conn.
func (wc *wsConn) Follow(_ context.Context, runID string) { wc.attach(runID) }

// Reset implements wsproto.Conn.
func (wc *wsConn) Reset(ctx context.Context, sessionID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wsDeliverTimeout)
	defer cancel()
	return wc.g.cfg.Runner.Reset(ctx, sessionID)
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
	wc.g.leaveSessions(wc)
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
		wc.frameMu.Lock()
		wc.Send(frame)
		wc.frameMu.Unlock()
		if ev.Result != nil {
			wc.detach(ev.RunID)
		}
	}
}

// Send implements wsproto.Conn: it queues a frame for the writer.
func (wc *wsConn) Send(frame any) {
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
