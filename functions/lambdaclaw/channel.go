package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// channelTitle is how the stack's outputs name a channel (infra/channels.go):
// <Title>SecretName, and <Title><Route>Url for each webhook.
var channelTitle = map[string]string{"slack": "Slack", "discord": "Discord", "whatsapp": "WhatsApp"}

// channelCommand is `lambdaclaw channel set-secret|status`.
func channelCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("channel", []string{"set-secret", "status"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	if sub == "set-secret" {
		return channelSetSecret(ctx, args[1:], stdout, stderr)
	}
	return channelStatus(ctx, args[1:], stdout, stderr)
}

// channelSetSecret is `channel set-secret NAME --stack STACK`: the
// channel's section of the local config file, its references resolved
// from the environment and files, becomes the stack's secret of the
// channel (cloud.ChannelSecret), which the channels and step functions
// read. Values are never printed.
func channelSetSecret(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("channel set-secret", "NAME", "Store the channels.NAME section of the config file, with the values of its secret references\n"+
		"(read from the environment and the secret files), in the deployed stack's secret of the channel, which\n"+
		"its functions read (infra/README.md, Slack, Discord and WhatsApp on AWS). NAME is "+strings.Join(config.ChannelNames, ", ")+".", stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	pos, err := fs.parse(args, 1, 1, stdout)
	if err != nil {
		return err
	}
	name := pos[0]
	if !st.remote() {
		return errors.New("channel set-secret needs --stack NAME: the stack whose secret to set")
	}
	if !slices.Contains(config.ChannelNames, name) {
		return fmt.Errorf("no channel %q; the channels are %s", name, strings.Join(config.ChannelNames, ", "))
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	secret, vars, err := config.ChannelSecret(cfg, name, getenv)
	if err != nil {
		return err
	}
	chs, err := config.ParseChannelSecret(name, secret)
	if err != nil {
		return err
	}
	if err := channelset.Serverless(chs, name); err != nil {
		return err
	}
	d, err := st.open(ctx)
	if err != nil {
		return err
	}
	key := channelTitle[name] + "SecretName"
	if d.outputs[key] == "" {
		return fmt.Errorf("%s does not serve %s: deploy it with CDK_FLAGS='-c %s=on' (infra/README.md)", d.where(), name, name)
	}
	sm, err := awsapi.NewSecretsManager(d.aws, getenv(envSecretsEndpoint))
	if err != nil {
		return err
	}
	if err := sm.PutSecretString(ctx, d.outputs[key], string(secret)); err != nil {
		return fmt.Errorf("write secret %s: %w", d.outputs[key], err)
	}
	fmt.Fprintf(stdout, "channels.%s of %s stored in secret %s of %s (values of %s)\n", name, cfg.Path, d.outputs[key], d.where(), strings.Join(vars, ", "))
	for _, u := range channelURLs(d, name) {
		fmt.Fprintf(stdout, "give the platform: %s\n", u)
	}
	fmt.Fprintln(stdout, "function instances started before read the secret when they next start")
	return nil
}

// channelURLs are the stack's webhook URLs of the channel, sorted.
func channelURLs(d *deployment, name string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(d.outputs)) {
		if strings.HasPrefix(k, channelTitle[name]) && strings.HasSuffix(k, "Url") {
			out = append(out, d.outputs[k])
		}
	}
	return out
}

// channelStatus is `channel status [--stack STACK]`: each channel, its
// webhook, whether its secret is set (--stack; never reading it) and
// its outbox.
func channelStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("channel status", "", "Print each messaging channel (Slack, Discord, WhatsApp): whether it is configured, its webhook\n"+
		"and its outbox. With --stack, the stack's channels: whether their secret is set and the URLs to give the platforms.", stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if st.remote() {
		return stackChannelStatus(ctx, st, stdout)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	var db interface{ Channel(string) store.Channel }
	for _, name := range config.ChannelNames {
		if !cfg.Channels.Enabled(name) {
			fmt.Fprintf(stdout, "%s: not configured (channels.%s in %s)\n", name, name, cfg.Path)
			continue
		}
		if db == nil {
			s, err := openExistingDB(cfg)
			if err != nil {
				return err
			}
			defer s.Close()
			db = s
		}
		line, err := outboxLine(ctx, db.Channel(name))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: enabled, webhook %s; %s\n", name, strings.Join(channelset.Paths[name], ", "), line)
	}
	return nil
}

// stackChannelStatus is channel status --stack.
func stackChannelStatus(ctx context.Context, st *stackFlags, stdout io.Writer) error {
	d, err := st.open(ctx)
	if err != nil {
		return err
	}
	sm, err := awsapi.NewSecretsManager(d.aws, getenv(envSecretsEndpoint))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s:\n", d.where())
	var db interface{ Channel(string) store.Channel }
	for _, name := range config.ChannelNames {
		secret := d.outputs[channelTitle[name]+"SecretName"]
		if secret == "" {
			fmt.Fprintf(stdout, "%s: not deployed (CDK_FLAGS='-c %s=on')\n", name, name)
			continue
		}
		set, changed, err := sm.SecretSet(ctx, secret)
		if err != nil {
			return fmt.Errorf("secret %s: %w", secret, err)
		}
		state := "secret " + secret + " has no value: its webhook answers 503 until `lambdaclaw channel set-secret " + name + " --stack " + d.name + "`"
		if set {
			state = "secret " + secret + " set " + changed.Format("2006-01-02 15:04 UTC")
		}
		if db == nil {
			if db, err = d.store(ctx); err != nil {
				return err
			}
		}
		line, err := outboxLine(ctx, db.Channel(name))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s; %s\n", name, state, line)
		for _, u := range channelURLs(d, name) {
			fmt.Fprintf(stdout, "  %s\n", u)
		}
	}
	return nil
}

// outboxLine says how many of a channel's messages wait or failed.
func outboxLine(ctx context.Context, ch store.Channel) (string, error) {
	s, err := ch.OutboxStats(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("outbox %d pending, %d failed, %d sent", s.Pending, s.Failed, s.Sent), nil
}
