package gateway

import (
	"context"
	"slices"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// wsMaxSessions bounds the sessions one connection is found by; a
// connection that talks as more users is found by its first ones.
const wsMaxSessions = 64

// joinSession makes wc one of the connections check-ins of sessionID go to.
func (g *Gateway) joinSession(wc *wsConn, sessionID string) {
	g.wsMu.Lock()
	defer g.wsMu.Unlock()
	if slices.Contains(wc.sessions, sessionID) || len(wc.sessions) >= wsMaxSessions {
		return
	}
	wc.sessions = append(wc.sessions, sessionID)
	conns := g.wsSessions[sessionID]
	if conns == nil {
		conns = map[*wsConn]bool{}
		g.wsSessions[sessionID] = conns
	}
	conns[wc] = true
}

// leaveSessions forgets a connection that closed.
func (g *Gateway) leaveSessions(wc *wsConn) {
	g.wsMu.Lock()
	defer g.wsMu.Unlock()
	for _, id := range wc.sessions {
		delete(g.wsSessions[id], wc)
		if len(g.wsSessions[id]) == 0 {
			delete(g.wsSessions, id)
		}
	}
	wc.sessions = nil
}

// CheckIns is the delivery of check-ins to WebSocket users (target
// ws:<user>, or ws:<key id>/<user> for a person of sessions.users): the
// answer goes, as a check_in frame, to every open connection of this
// server in which the user talks with the job's agent. The user must be
// one of the job's owner: a user of the owner's key, or a WebSocket id
// linked to the owning person. With no such connection open the delivery
// fails (the answer stays in the job's runs).
func (g *Gateway) CheckIns() schedule.Delivery {
	return func(_ context.Context, a schedule.Answer) error {
		sessionID, err := wsproto.CheckInSession(g.cfg.Identity, a.Job)
		if err != nil {
			return err
		}
		frame := wsproto.NewCheckIn(a)
		g.wsMu.Lock()
		conns := make([]*wsConn, 0, len(g.wsSessions[sessionID]))
		for wc := range g.wsSessions[sessionID] {
			conns = append(conns, wc)
		}
		g.wsMu.Unlock()
		if len(conns) == 0 {
			return wsproto.NoConnection(a.Job)
		}
		for _, wc := range conns {
			wc.Send(frame)
		}
		return nil
	}
}
