package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// discordClient is the client of the configured Discord application.
func discordClient(cfg *config.Config) (*discord.Client, error) {
	dc := cfg.Channels.Discord
	if dc.BotToken.Value() == "" || dc.ApplicationID == "" {
		return nil, fmt.Errorf("config: channels.discord needs bot_token and application_id")
	}
	return discord.NewClient(dc.APIBase, dc.BotToken.Value(), dc.ApplicationID), nil
}

// discordCommand is `lambdaclaw discord register`: it makes /ask, /reset,
// /stop and /help the application's slash commands and prints the
// address that invites the bot into a server.
func discordCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if _, err := subcommand("discord", []string{"register"}, args, stdout, stderr); err != nil {
		return err
	}
	fs := newFlags("discord register", "", "Register the Discord application's slash commands (/ask, /reset, /stop, /help), replacing\n"+
		"its other global commands, and print the address that invites the bot into a server.", stderr)
	loadConfig := fs.withConfig()
	if _, err := fs.parse(args[1:], 0, 0, stdout); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	client, err := discordClient(cfg)
	if err != nil {
		return err
	}
	cmds, err := client.RegisterCommands(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = "/" + c.Name
	}
	fmt.Fprintf(stdout, "registered %s (new commands can take a minute to show in Discord)\ninvite the bot: %s\n",
		strings.Join(names, ", "), discord.InviteURL(client.ApplicationID()))
	return nil
}

// checkDiscord checks the bot token with GET /applications/@me: that it
// is the configured application's, that the configured public key is the
// one Discord signs interactions for, and that /ask is registered.
func (d *doctor) checkDiscord(ctx context.Context) finding {
	dc := d.cfg.Channels.Discord
	client, err := discordClient(d.cfg)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "see shared/channels/discord/README.md"}
	}
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	app, err := client.Application(ctx)
	if ce, ok := errors.AsType[*channel.Error](err); ok && ce.Status == http.StatusUnauthorized {
		return finding{Verdict: fail, Detail: "Discord refused the bot token in " + dc.BotToken.Source() + " (" + ce.Message + ")",
			Fix: "reset the token on the Bot page of the application in the Developer Portal and set it again"}
	}
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the network, and DISCORD_API_BASE when it is set"}
	}
	switch {
	case app.ID != dc.ApplicationID:
		return finding{Verdict: fail, Detail: fmt.Sprintf("the bot token is application %s's, not application_id %s's", app.ID, dc.ApplicationID),
			Fix: "set channels.discord.application_id to " + app.ID + " in " + d.configPath() + ", or use that application's bot token"}
	case dc.PublicKey != "" && !strings.EqualFold(app.VerifyKey, dc.PublicKey):
		return finding{Verdict: fail, Detail: "channels.discord.public_key is not the application's public key: every interaction would be refused",
			Fix: "set channels.discord.public_key to " + app.VerifyKey + " (General Information in the Developer Portal)"}
	}
	bot := "no bot user"
	if app.Bot != nil {
		bot = "bot @" + app.Bot.Username
	}
	mode := "gateway on"
	if !dc.UseGateway() {
		mode = "gateway off"
	}
	if dc.PublicKey != "" {
		mode += ", interactions at " + discord.InteractionsPath
	}
	detail := fmt.Sprintf("application %s (%s); %s", app.Name, bot, mode)
	cmds, err := client.Commands(ctx)
	if err != nil {
		return finding{Verdict: warn, Detail: detail + "; cannot list the slash commands: " + err.Error(), Fix: "run `lambdaclaw discord register`"}
	}
	if !slices.ContainsFunc(cmds, func(c discord.Command) bool { return c.Name == "ask" }) {
		return finding{Verdict: warn, Detail: detail + "; /ask is not registered", Fix: "run `lambdaclaw discord register`"}
	}
	return finding{Verdict: pass, Detail: detail + "; /ask registered"}
}

// discordChannel is the Discord channel of `serve`: the engine over the
// Discord client, and what receives from Discord.
type discordChannel struct {
	client  *discord.Client
	replier *channel.Replier
	// interactions is the Interactions endpoint (nil without a public
	// key); gateway the Gateway (nil when off).
	interactions http.Handler
	gateway      *discord.Gateway
}

// newDiscord builds the sending half of the Discord channel when the
// config enables it, and nil otherwise; the agent loop replies through
// its replier.
func newDiscord(cfg *config.Config, db *sqlite.DB, log *slog.Logger) (*discordChannel, error) {
	dc := cfg.Channels.Discord
	if !dc.Enabled {
		return nil, nil
	}
	autonomy, err := tool.ParseAutonomy(dc.Autonomy)
	if err != nil {
		return nil, fmt.Errorf("config: channels.discord.autonomy: %w", err)
	}
	client, err := discordClient(cfg)
	if err != nil {
		return nil, err
	}
	r, err := channel.NewReplier(channel.Config{
		Platform: client, Store: db.Channel(discord.Name), Agent: dc.Agent, Autonomy: autonomy,
		AllowedUsers: dc.AllowedUsers, AccessCodes: secretValues(dc.AccessCodes), Groups: channel.Groups{Respond: dc.Groups.Respond, Context: dc.Groups.ContextSize()},
		Identity: agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()}, Log: log,
	})
	if err != nil {
		return nil, err
	}
	return &discordChannel{client: client, replier: r}, nil
}

// start adds the receiving half, handing what Discord delivers to runs
// of runner: the engine's sender runs until ctx is done; the Interactions
// endpoint is made (with a public key), and the Gateway (when on), which
// the caller runs once the server listens. The Gateway keeps its session
// in the database, so that a restart resumes it.
func (d *discordChannel) start(ctx context.Context, cfg *config.Config, db *sqlite.DB, runner channel.Runner, log *slog.Logger) (wait func(), err error) {
	ch, err := channel.NewChannel(d.replier, runner)
	if err != nil {
		return nil, err
	}
	rc := discord.Config{Client: d.client, PublicKey: cfg.Channels.Discord.PublicKey, Handle: ch.Handle, State: db.Channel(discord.Name), Log: log}
	if rc.PublicKey != "" {
		if d.interactions, err = discord.NewInteractions(rc); err != nil {
			return nil, err
		}
	}
	if cfg.Channels.Discord.UseGateway() {
		if d.gateway, err = discord.NewGateway(rc); err != nil {
			return nil, err
		}
	}
	ch.Run(ctx)
	return ch.Wait, nil
}
