package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
)

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
	client, err := channelset.DiscordClient(&cfg.Channels.Discord)
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
	client, err := channelset.DiscordClient(&d.cfg.Channels.Discord)
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
