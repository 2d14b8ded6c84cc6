package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// checkSlack checks the bot token with auth.test and, in mode socket, the
// app token with apps.connections.open (the URL it gives is left unused).
func (d *doctor) checkSlack(ctx context.Context) finding {
	sc := d.cfg.Channels.Slack
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	client := slack.NewClient(sc.APIBase, sc.BotToken.Value())
	auth, err := client.AuthTest(ctx)
	var ce *channel.Error
	if errors.As(err, &ce) && ce.Permanent {
		return finding{Verdict: fail, Detail: fmt.Sprintf("Slack refused the bot token in %s (%s)", sc.BotToken.Source(), ce.Code),
			Fix: "copy the Bot User OAuth Token (xoxb-) again from the app's OAuth & Permissions page, or reinstall the app"}
	}
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the network, and channels.slack.api_base when it is set"}
	}
	detail := fmt.Sprintf("bot %s (%s) of workspace %s (%s), mode %s", auth.User, auth.UserID, auth.Team, auth.TeamID, sc.Mode)
	if sc.Mode == "socket" {
		_, err := client.OpenConnection(ctx, sc.AppToken.Value())
		if errors.As(err, &ce) && ce.Permanent {
			return finding{Verdict: fail, Detail: fmt.Sprintf("%s; Slack refused the app token in %s (%s)", detail, sc.AppToken.Source(), ce.Code),
				Fix: "make an app-level token with connections:write under Basic Information, and turn Socket Mode on"}
		}
		if err != nil {
			return finding{Verdict: fail, Detail: detail + "; " + err.Error(), Fix: "check the network"}
		}
		detail += ", app token accepted"
	}
	return finding{Verdict: pass, Detail: detail}
}
