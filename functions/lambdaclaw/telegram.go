package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// newTelegramReplier builds the sending half of the Telegram channel when
// the config enables it, and nil otherwise. The agent loop replies
// through it; telegram.NewChannel then adds the receiving half, which
// hands updates to the driver built on that loop.
func newTelegramReplier(cfg *config.Config, db *sqlite.DB, media channel.Media, log *slog.Logger) (*telegram.Replier, error) {
	tc := cfg.Telegram
	if !tc.Enabled {
		return nil, nil
	}
	autonomy, err := tool.ParseAutonomy(tc.Autonomy)
	if err != nil {
		return nil, fmt.Errorf("config: telegram.autonomy: %w", err)
	}
	return telegram.NewReplier(telegram.Config{
		Client: telegram.NewClient(tc.APIBase, tc.Token), Store: db.Channel(telegram.ChannelName),
		Agent: tc.Agent, Autonomy: autonomy, AllowedUsers: tc.AllowedUsers, AccessCodes: config.SecretValues(tc.AccessCodes), Log: log,
		Groups: channel.Groups{Respond: tc.Groups.Respond, Context: tc.Groups.ContextSize()}, Media: media,
		Identity: agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()},
	})
}

// telegramCommand is `lambdaclaw telegram setup|remove`, for the local
// server or, with --stack, for a deployed stack's bot.
func telegramCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("telegram", []string{"setup", "remove"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	about := "Register the bot's webhook at telegram.public_url of the config file, with a fresh secret token.\n" +
		"With --stack: at the stack's TelegramWebhookUrl, with the bot token and the secret token of its secrets\n" +
		"(after a new bot token, say)."
	if sub == "remove" {
		about = "Remove the bot's webhook, so that the server can long-poll again. With --stack: the deployed bot\n" +
			"gets no messages until `lambdaclaw telegram setup --stack NAME`."
	}
	fs := newFlags("telegram "+sub, "", about, stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	if _, err := fs.parse(args[1:], 0, 0, stdout); err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if st.remote() {
		return stackTelegram(ctx, st, sub, stdout)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Telegram.Token == "" {
		return fmt.Errorf("TELEGRAM_BOT_TOKEN is not set")
	}
	client := telegram.NewClient(cfg.Telegram.APIBase, cfg.Telegram.Token)
	if sub == "remove" {
		if err := client.DeleteWebhook(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "webhook removed; the server can long-poll again")
		return nil
	}
	if cfg.Telegram.PublicURL == "" {
		return fmt.Errorf("config: telegram.public_url is needed to register a webhook")
	}
	db, err := sqlite.Open(cfg.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()
	me, err := client.GetMe(ctx)
	if err != nil {
		return err
	}
	secret, hash := telegram.NewSecret()
	// The hash is stored first: a webhook call can arrive as soon as
	// setWebhook returns.
	if err := db.Channel(telegram.ChannelName).SetState(ctx, telegram.KeyWebhookSecret, hash); err != nil {
		return err
	}
	url := strings.TrimRight(cfg.Telegram.PublicURL, "/") + config.TelegramWebhookPath
	if err := client.SetWebhook(ctx, url, secret); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "webhook of @%s set to %s (secret token stored hashed in the database)\n", me.Username, url)
	return nil
}

// stackTelegram is `telegram setup|remove --stack`: the deployment's
// custom resource registers the webhook only when its URL changes, so
// after a new bot token (or a removal) the operator registers it here,
// with what the telegram function checks: the stack's webhook URL and the
// secret token in its TelegramWebhookSecret. The secret is not rotated:
// warm functions keep the value they read.
func stackTelegram(ctx context.Context, st *stackFlags, sub string, stdout io.Writer) error {
	d, err := st.open(ctx)
	if err != nil {
		return err
	}
	if !d.telegram() {
		return fmt.Errorf("%s has no Telegram bot: deploy it with CDK_FLAGS='-c telegram=on' (infra/README.md, Deploy)", d.where())
	}
	if err := d.need(outTelegramURL, outBotToken, outWebhookSecret); err != nil {
		return err
	}
	token, err := d.secret(ctx, secretName(d.outputs[outBotToken]))
	if err != nil {
		return fmt.Errorf("bot token: %w", err)
	}
	client := telegram.NewClient(getenv("TELEGRAM_API_BASE"), token)
	if sub == "remove" {
		if err := client.DeleteWebhook(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook removed; the bot of %s gets no messages until `lambdaclaw telegram setup --stack %s`\n", d.where(), d.name)
		return nil
	}
	secret, err := d.secret(ctx, d.outputs[outWebhookSecret])
	if err != nil {
		return fmt.Errorf("webhook secret: %w", err)
	}
	me, err := client.GetMe(ctx)
	if err != nil {
		return err
	}
	url := d.outputs[outTelegramURL]
	if err := client.SetWebhook(ctx, url, secret); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "webhook of @%s set to %s (secret token from the stack's %s)\n", me.Username, url, outWebhookSecret)
	return nil
}

// statusCommand is `lambdaclaw status`: what the database, or the
// table of the stack --stack names, says about the gateway.
func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "", "Print what the database says about the server: the agents, the API keys, the sessions\nwith unfinished runs and the Telegram outbox. With --stack, the same about the deployed stack.", stderr)
	_, tg, err := fs.parseTarget(ctx, args, 0, stdout)
	if err != nil {
		return err
	}
	ags, err := tg.agents()
	if err != nil {
		return err
	}
	db, err := tg.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	keys, err := db.ListKeys(ctx)
	if err != nil {
		return err
	}
	active := 0
	for _, k := range keys {
		if k.RevokedAt == nil {
			active++
		}
	}
	busy, err := db.UnfinishedSessions(ctx)
	if err != nil {
		return err
	}
	out, err := db.telegram.OutboxStats(ctx)
	if err != nil {
		return err
	}
	if tg.stack != nil {
		fmt.Fprintf(stdout, "%s: %s, table %s\n", tg.stack.where(), tg.stack.status, tg.stack.outputs[outTable])
	}
	fmt.Fprintf(stdout, "agents: %s\n", strings.Join(ags, ", "))
	fmt.Fprintf(stdout, "api keys: %d active (%d total)\n", active, len(keys))
	fmt.Fprintf(stdout, "sessions with unfinished runs: %d\n", len(busy))
	fmt.Fprintf(stdout, "telegram: %s\n", tg.telegram)
	fmt.Fprintf(stdout, "telegram outbox: %d pending, %d failed, %d sent\n", out.Pending, out.Failed, out.Sent)
	return nil
}

// buildAgentNames lists the agents `lambdaclaw serve` serves: the
// workspaces, the agents of the config file and the default agent (serve
// creates the workspaces of the last two).
func buildAgentNames(cfg *config.Config) ([]string, error) {
	names, err := workspace.List(context.Background(), osroot.New(cfg.Home))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, config.DefaultAgent) {
		names = append(names, config.DefaultAgent)
	}
	for n := range cfg.Agents {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}
