// Package channelset builds the messaging channels a config's channels
// section enables (Slack, Discord, WhatsApp), for both homes of the gateway:
// `lambdaclaw serve` and the AWS functions (shared/wiring/cloud). A
// channel is built in two halves, as the agent loop needs its replier
// before the runner exists: Build makes the sending half (the platform
// and the engine's channel.Replier, which the loop's Router gets), Start
// the receiving half (the engine's channel.Channel on the runner, the
// receiver's HTTP handlers by route, and a long-running receiver such as
// Discord's Gateway or Slack's Socket Mode, which only a server runs).
package channelset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/whatsapp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Paths are each channel's webhook routes, as serve and the stack's REST
// API serve them (Discord's only with a public key, Slack's in mode
// events).
var Paths = map[string][]string{"slack": {slack.EventsPath, slack.InteractivePath}, "discord": {discord.InteractionsPath},
	"whatsapp": {config.WhatsAppWebhookPath}}

// Names are the messaging channels' names (their Platform.Name): the
// prefixes of their identities' owners ("slack:T1:U1"), whose sessions
// the web console lists to admin keys.
var Names = []string{telegram.ChannelName, slack.Name, discord.Name, whatsapp.Name}

// Env is what the channels are built with.
type Env struct {
	// Store is the state of the channel called name.
	Store    func(name string) store.Channel
	Identity agent.Identity
	// Media says what is done with the files people send.
	Media channel.Media
	Log   *slog.Logger
	// Serverless is for a Lambda function: replies are delivered before
	// the invocation returns (channel.Config.Serverless), and no
	// long-running receiver is made.
	Serverless bool
}

// Channel is one configured channel.
type Channel struct {
	// Name is the platform's name (channel.Platform.Name), the reply
	// channel of its runs.
	Name string
	// Agent answers the channel.
	Agent   string
	Replier *channel.Replier
	// Engine, Routes and Receive are set by Start: the engine, the
	// receiver's handlers by path (as the REST API routes them on AWS),
	// and the long-running receiver to run (nil for none, and always
	// when serverless).
	Engine  *channel.Channel
	Routes  map[string]http.Handler
	Receive func(ctx context.Context) error

	// receiver makes Routes and Receive for the engine's Handle.
	receiver func(handle func(context.Context, channel.Inbound) error) (map[string]http.Handler, func(context.Context) error, error)
}

// Build makes the sending half of each channel chs enables, in the order
// of config.ChannelNames.
// Slack's is asked whose its bot token is (auth.test) within ctx.
func Build(ctx context.Context, chs *config.Channels, env Env) ([]*Channel, error) {
	var out []*Channel
	for _, name := range config.ChannelNames {
		if !chs.Enabled(name) {
			continue
		}
		c, err := build(ctx, name, chs, env)
		if err != nil {
			return nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// section is what the engine needs of every section.
type section struct {
	agent, autonomy string
	allowed         []string
	codes           []config.Secret
	groups          config.Groups
}

func build(ctx context.Context, name string, chs *config.Channels, env Env) (*Channel, error) {
	if env.Serverless {
		if err := Serverless(chs, name); err != nil {
			return nil, err
		}
	}
	var (
		p   channel.Platform
		sec section
		c   = &Channel{}
	)
	switch name {
	case "whatsapp":
		wc := chs.WhatsApp
		sec = section{wc.Agent, wc.Autonomy, wc.AllowedUsers, wc.AccessCodes, wc.Groups}
		wp, err := whatsapp.New(whatsapp.Config{APIBase: wc.APIBase, PhoneNumberID: wc.PhoneNumberID, AccessToken: wc.AccessToken.Value(),
			AppSecret: wc.AppSecret.Value(), VerifyToken: wc.VerifyToken.Value(),
			Template: whatsapp.Template{Name: wc.Template.Name, Language: wc.Template.Language}, State: env.Store(whatsapp.Name), Log: env.Log})
		if err != nil {
			return nil, err
		}
		p = wp
		c.receiver = func(handle func(context.Context, channel.Inbound) error) (map[string]http.Handler, func(context.Context) error, error) {
			return map[string]http.Handler{config.WhatsAppWebhookPath: wp.Webhook(handle)}, nil, nil
		}
	case "slack":
		sc := chs.Slack
		sec = section{sc.Agent, sc.Autonomy, sc.AllowedUsers, sc.AccessCodes, sc.Groups}
		client := slack.NewClient(sc.APIBase, sc.BotToken.Value())
		bot, err := slackBot(ctx, client, &sc, env.Log)
		if err != nil {
			return nil, err
		}
		p = client
		c.receiver = func(handle func(context.Context, channel.Inbound) error) (map[string]http.Handler, func(context.Context) error, error) {
			r := &slack.Receiver{SigningSecret: sc.SigningSecret.Value(), Parser: slack.Parser{Bot: bot, Download: client.Download}, Handle: handle, Client: client, Log: env.Log}
			if sc.Mode == "socket" {
				sock := &slack.Socket{Client: client, AppToken: sc.AppToken.Value(), Receiver: r}
				return nil, sock.Run, nil
			}
			return map[string]http.Handler{slack.EventsPath: r.Events(), slack.InteractivePath: r.Interactive()}, nil, nil
		}
	case "discord":
		dc := chs.Discord
		sec = section{dc.Agent, dc.Autonomy, dc.AllowedUsers, dc.AccessCodes, dc.Groups}
		client, err := DiscordClient(&dc)
		if err != nil {
			return nil, err
		}
		p = client
		c.receiver = func(handle func(context.Context, channel.Inbound) error) (map[string]http.Handler, func(context.Context) error, error) {
			rc := discord.Config{Client: client, PublicKey: dc.PublicKey, Handle: handle, State: env.Store(discord.Name), Log: env.Log}
			routes := map[string]http.Handler{}
			if rc.PublicKey != "" {
				h, err := discord.NewInteractions(rc)
				if err != nil {
					return nil, nil, err
				}
				routes[discord.InteractionsPath] = h
			}
			if env.Serverless || !dc.UseGateway() {
				return routes, nil, nil
			}
			// The Gateway keeps its session in the store, so that a
			// restart resumes it.
			gw, err := discord.NewGateway(rc)
			if err != nil {
				return nil, nil, err
			}
			return routes, gw.Run, nil
		}
	default:
		return nil, fmt.Errorf("channelset: no channel %q", name)
	}
	autonomy, err := tool.ParseAutonomy(sec.autonomy)
	if err != nil {
		return nil, fmt.Errorf("autonomy: %w", err)
	}
	r, err := channel.NewReplier(channel.Config{Platform: p, Store: env.Store(p.Name()), Agent: sec.agent, Autonomy: autonomy,
		AllowedUsers: sec.allowed, AccessCodes: config.SecretValues(sec.codes), Log: env.Log, Serverless: env.Serverless,
		Groups: channel.Groups{Respond: sec.groups.Respond, Context: sec.groups.ContextSize()}, Identity: env.Identity, Media: env.Media})
	if err != nil {
		return nil, err
	}
	c.Name, c.Agent, c.Replier = p.Name(), sec.agent, r
	return c, nil
}

// Start makes the receiving half: the engine handing what the platform
// delivers to runs of runner, and the receiver's routes and long-running
// receiver. The caller runs the engine (Engine.Run) in a server.
func (c *Channel) Start(runner channel.Runner) error {
	e, err := channel.NewChannel(c.Replier, runner)
	if err != nil {
		return fmt.Errorf("channel %s: %w", c.Name, err)
	}
	routes, receive, err := c.receiver(e.Handle)
	if err != nil {
		return fmt.Errorf("channel %s: %w", c.Name, err)
	}
	c.Engine, c.Routes, c.Receive = e, routes, receive
	return nil
}

// Serverless checks that the section name of chs can run in a Lambda
// function, which only webhooks reach: Slack in mode events, Discord with
// a public key (its Interactions endpoint).
func Serverless(chs *config.Channels, name string) error {
	switch {
	case name == "slack" && chs.Slack.Mode != "events":
		return fmt.Errorf("config: channels.slack.mode %s needs a server; on AWS, Slack posts to the stack's Request URLs: set mode: events", chs.Slack.Mode)
	case name == "discord" && chs.Discord.PublicKey == "":
		return fmt.Errorf("config: channels.discord needs public_key on AWS, where Discord reaches the bot by its Interactions endpoint only")
	}
	return nil
}

// slackBot asks auth.test whose the bot token is: a token Slack refuses
// is an error; when Slack cannot be reached, the channel starts without
// knowing its workspace (deliveries from any workspace the signing secret
// signs are taken) and learns the bot's user from the events.
func slackBot(ctx context.Context, client *slack.Client, sc *config.Slack, log *slog.Logger) (slack.Bot, error) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	auth, err := client.AuthTest(actx)
	if ce, ok := errors.AsType[*channel.Error](err); ok && ce.Permanent {
		return slack.Bot{}, fmt.Errorf("bot_token (%s): %w", sc.BotToken.Source(), err)
	}
	if err != nil {
		log.Warn("slack: auth.test failed; the channel starts without knowing its workspace", "error", err)
		return slack.Bot{}, nil
	}
	return slack.Bot{UserID: auth.UserID, TeamID: auth.TeamID}, nil
}

// DiscordClient is the client of the Discord application dc configures.
func DiscordClient(dc *config.Discord) (*discord.Client, error) {
	if dc.BotToken.Value() == "" || dc.ApplicationID == "" {
		return nil, fmt.Errorf("config: channels.discord needs bot_token and application_id")
	}
	return discord.NewClient(dc.APIBase, dc.BotToken.Value(), dc.ApplicationID), nil
}
