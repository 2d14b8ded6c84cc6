package main

import (
	"fmt"
	"log/slog"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/whatsapp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// newWhatsApp builds the WhatsApp channel's platform and its replier
// (the sending half, through which the agent loop replies) when the
// config enables it, and nils otherwise; channel.NewChannel then adds the
// receiving half, whose Handle the platform's webhook calls.
func newWhatsApp(cfg *config.Config, db *sqlite.DB, log *slog.Logger) (*whatsapp.Platform, *channel.Replier, error) {
	wc := cfg.Channels.WhatsApp
	if !wc.Enabled {
		return nil, nil, nil
	}
	autonomy, err := tool.ParseAutonomy(wc.Autonomy)
	if err != nil {
		return nil, nil, fmt.Errorf("config: channels.whatsapp.autonomy: %w", err)
	}
	st := db.Channel(whatsapp.Name)
	p, err := whatsapp.New(whatsapp.Config{APIBase: wc.APIBase, PhoneNumberID: wc.PhoneNumberID, AccessToken: wc.AccessToken.Value(),
		AppSecret: wc.AppSecret.Value(), VerifyToken: wc.VerifyToken.Value(),
		Template: whatsapp.Template{Name: wc.Template.Name, Language: wc.Template.Language}, State: st, Log: log})
	if err != nil {
		return nil, nil, err
	}
	r, err := channel.NewReplier(channel.Config{Platform: p, Store: st, Agent: wc.Agent, Autonomy: autonomy,
		AllowedUsers: wc.AllowedUsers, AccessCodes: secretValues(wc.AccessCodes), Log: log,
		Groups:   channel.Groups{Respond: wc.Groups.Respond, Context: wc.Groups.ContextSize()},
		Identity: agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()}})
	if err != nil {
		return nil, nil, err
	}
	return p, r, nil
}
