package apigw

import (
	"cmp"
	"context"
	"errors"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// Index is the index of connections by the sessions their users talk in,
// which WebSocket.Handle keeps (Connections.JoinSession).
type Index interface {
	// SessionConnections returns at most limit connections indexed under
	// owner's session.
	SessionConnections(ctx context.Context, owner, sessionID string, limit int) ([]string, error)
	// LeaveSession removes a connection from the session's index.
	LeaveSession(ctx context.Context, id, owner, sessionID string) error
}

// MaxCheckInConnections bounds the connections one check-in is posted to;
// a user with more open connections gets it on the index's first ones.
const MaxCheckInConnections = 32

// CheckIns is the delivery of check-ins to WebSocket users (target
// ws:<user>, or ws:<key id>/<user>) on AWS, as the local server's
// (gateway.CheckIns): the user must be one of the job's owner
// (wsproto.CheckInSession), and the answer goes, as a check_in frame, to
// every connection index holds for the user's session, one
// PostToConnection each. A connection found gone (410) is removed from
// the index. The delivery fails, and is not retried, when no connection
// took the frame: none is indexed, or every post failed (the first
// failure other than a gone connection is the reason).
func CheckIns(conns Conns, index Index, id agent.Identity) schedule.Delivery {
	return func(ctx context.Context, a schedule.Answer) error {
		sessionID, err := wsproto.CheckInSession(id, a.Job)
		if err != nil {
			return err
		}
		ids, err := index.SessionConnections(ctx, a.Job.Owner, sessionID, MaxCheckInConnections)
		if err != nil {
			return err
		}
		frame := wsproto.NewCheckIn(a)
		sent := 0
		var failed error
		for _, c := range ids {
			err := conns.Send(ctx, c, frame)
			switch {
			case err == nil:
				sent++
			case errors.Is(err, ErrGone):
				if err := index.LeaveSession(ctx, c, a.Job.Owner, sessionID); err != nil {
					conns.log().Warn("remove a gone connection from the index", "conn_id", c, "error", err)
				}
			default:
				conns.log().Warn("check-in not posted", "conn_id", c, "job", a.Job.ID, "error", err)
				failed = cmp.Or(failed, err)
			}
		}
		switch {
		case sent > 0:
			return nil
		case failed != nil:
			return failed
		}
		return wsproto.NoConnection(a.Job)
	}
}
