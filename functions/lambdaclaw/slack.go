package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// slackChannel is the Slack channel of `serve`: its replier, built before
// the agent loop that replies through it, then (start) its receiving
// half on the driver built on that loop.
type slackChannel struct {
	cfg     config.Slack
	client  *slack.Client
	bot     slack.Bot
	replier *channel.Replier
	channel *channel.Channel
	log     *slog.Logger
}

// newSlack builds the Slack channel's replier when the config enables it,
// and nil otherwise. It asks auth.test whose the bot token is: a token
// Slack refuses stops the server; when Slack cannot be reached, the
// channel starts without knowing its workspace (deliveries from any
// workspace the signing secret signs are taken) and learns the bot's user
// from the events.
func newSlack(ctx context.Context, cfg *config.Config, db *sqlite.DB, log *slog.Logger) (*slackChannel, error) {
	sc := cfg.Channels.Slack
	if !sc.Enabled {
		return nil, nil
	}
	autonomy, err := tool.ParseAutonomy(sc.Autonomy)
	if err != nil {
		return nil, fmt.Errorf("config: channels.slack.autonomy: %w", err)
	}
	client := slack.NewClient(sc.APIBase, sc.BotToken.Value())
	s := &slackChannel{cfg: sc, client: client, log: log}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	auth, err := client.AuthTest(actx)
	var ce *channel.Error
	switch {
	case errors.As(err, &ce) && ce.Permanent:
		return nil, fmt.Errorf("channels.slack.bot_token (%s): %w", sc.BotToken.Source(), err)
	case err != nil:
		log.Warn("slack: auth.test failed; the channel starts without knowing its workspace", "error", err)
	default:
		s.bot = slack.Bot{UserID: auth.UserID, TeamID: auth.TeamID}
	}
	s.replier, err = channel.NewReplier(channel.Config{
		Platform: client, Store: db.Channel(slack.Name),
		Agent: sc.Agent, Autonomy: autonomy, AllowedUsers: sc.AllowedUsers, AccessCodes: config.SecretValues(sc.AccessCodes),
		Groups:   channel.Groups{Respond: sc.Groups.Respond, Context: sc.Groups.ContextSize()},
		Identity: agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()},
		Log:      log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// start adds the receiving half on runner and starts delivering the
// outbox until ctx ends (wait waits for it).
func (s *slackChannel) start(ctx context.Context, runner channel.Runner) error {
	ch, err := channel.NewChannel(s.replier, runner)
	if err != nil {
		return err
	}
	s.channel = ch
	ch.Run(ctx)
	s.log.Info("slack channel started", "mode", s.cfg.Mode, "agent", s.cfg.Agent, "team", s.bot.TeamID, "bot", s.bot.UserID)
	return nil
}

func (s *slackChannel) wait() { s.channel.Wait() }

// receiver hands what Slack delivers to the channel.
func (s *slackChannel) receiver() *slack.Receiver {
	return &slack.Receiver{SigningSecret: s.cfg.SigningSecret.Value(), Parser: slack.Parser{Bot: s.bot},
		Handle: s.channel.Handle, Client: s.client, Log: s.log}
}

// routes adds the Events API and interactivity Request URLs to routes,
// in mode events.
func (s *slackChannel) routes(routes map[string]http.Handler) {
	if s.cfg.Mode != "events" {
		return
	}
	r := s.receiver()
	routes[slack.EventsPath] = r.Events()
	routes[slack.InteractivePath] = r.Interactive()
}

// socket runs Socket Mode until ctx ends, in mode socket; a token Slack
// refuses ends it with an error in the log.
func (s *slackChannel) socket(ctx context.Context) {
	if s.cfg.Mode != "socket" {
		return
	}
	sock := &slack.Socket{Client: s.client, AppToken: s.cfg.AppToken.Value(), Receiver: s.receiver()}
	if err := sock.Run(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("slack: socket mode stopped", "error", err)
	}
}

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
