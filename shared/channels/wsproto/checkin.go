package wsproto

import (
	"fmt"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// CheckInSession returns the session whose open connections get the
// answers of job j's check-ins (target ws:<user>, or ws:<key id>/<user>
// for a person of sessions.users): the session in which the user talks
// with the job's agent, as id derives it for the user's frames. The user
// must be one of the job's owner: a user of the owner's key, or a
// WebSocket id linked to the owning person. Both transports deliver
// through it (shared/channels/gateway, shared/adapters/apigw).
func CheckInSession(id agent.Identity, j schedule.Job) (string, error) {
	key, user, linked := strings.Cut(j.Deliver.To, "/")
	if !linked {
		owner, ok := strings.CutPrefix(j.Owner, "key:")
		if !ok {
			return "", fmt.Errorf("ws:%s names no API key, and the job's owner %s is not one: use ws:<key id>/<user>", j.Deliver.To, j.Owner)
		}
		key, user = owner, j.Deliver.To
	}
	owner, sessionID := id.Session(j.Agent, Channel, key, user)
	if owner != j.Owner {
		return "", fmt.Errorf("ws:%s is not a WebSocket user of the job's owner", j.Deliver.To)
	}
	return sessionID, nil
}

// NewCheckIn returns the check_in frame of a check-in's answer, its text
// scrubbed of credentials.
func NewCheckIn(a schedule.Answer) CheckIn {
	return CheckIn{Type: TypeCheckIn, JobID: a.Job.ID, RunID: a.Run.RunID, SessionID: a.Run.SessionID,
		Text: scrub.Scrub(a.Result.Content), Error: a.Result.Error}
}

// NoConnection is the error of a check-in for ws:<user> while no
// connection of the user is open.
func NoConnection(j schedule.Job) error {
	return fmt.Errorf("no WebSocket connection of ws:%s is open", j.Deliver.To)
}
