package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Slack, Discord and WhatsApp on AWS. The stack makes one Secrets Manager secret
// a channel it enables (`-c discord=on`), empty, and names it in the
// channels and step functions' environment:
//
//	SLACK_SECRET_ARN     the Slack channel's secret (name or ARN)
//	DISCORD_SECRET_ARN   the Discord channel's secret
//	WHATSAPP_SECRET_ARN  the WhatsApp channel's secret
//
// `lambdaclaw channel set-secret` puts the channel's config section in it
// (config.ChannelSecret): its settings and the values of its secret references.
// A function reads each named secret once, builds the channel as serve
// does (channelset, serverless: replies are delivered before the
// invocation returns) and routes its runs' replies to it; the channels
// function serves its webhooks. A secret without a value yet, or whose
// section cannot run here, leaves the channel out, its webhook answering
// 503.

// SecretVar is the variable naming the secret of the channel name
// (DISCORD_SECRET_ARN).
func SecretVar(name string) string { return strings.ToUpper(name) + "_SECRET_ARN" }

// newChannels builds the channels whose secret the environment names and
// has a value, routing their runs' replies through router; r.Channels
// gets them, and r.ChannelsOff the others named, with why.
func (r *Root) newChannels(ctx context.Context, getenv func(string) string, router agent.Router) error {
	r.ChannelsOff = map[string]string{}
	for _, name := range config.ChannelNames {
		id := getenv(SecretVar(name))
		if id == "" {
			continue
		}
		chs, err := r.channelConfig(ctx, name, id)
		if err != nil {
			var off *channelOff
			if errors.As(err, &off) {
				r.ChannelsOff[name] = off.why
				r.Log.Warn("channel not configured: its webhook answers 503", "channel", name, "reason", off.why)
				continue
			}
			return fmt.Errorf("cloud: channel %s: %w", name, err)
		}
		built, err := channelset.Build(ctx, chs, channelset.Env{Store: r.Store.Channel, Identity: r.Identity, Log: r.Log, Serverless: true})
		if err != nil {
			// A section that cannot run here, or a token the platform
			// refuses: the channel is off, the rest of the function runs.
			r.ChannelsOff[name] = err.Error()
			r.Log.Error("channel not started: its webhook answers 503", "channel", name, "error", err)
			continue
		}
		for _, c := range built {
			if err := c.Start(r.Driver); err != nil {
				return fmt.Errorf("cloud: %w", err)
			}
			router[c.Name] = c.Replier
			r.Channels = append(r.Channels, c)
		}
	}
	return nil
}

// channelOff is why a channel is left out: its secret has no value, or
// one that is not a valid section.
type channelOff struct{ why string }

func (e *channelOff) Error() string { return e.why }

// channelConfig reads the channel's secret id and parses its section with
// config's own code. A failed read is an error; a secret without a value
// or with a bad one is a *channelOff.
func (r *Root) channelConfig(ctx context.Context, name, id string) (*config.Channels, error) {
	v, err := r.Secret(ctx, id)
	if ae, ok := errors.AsType[*awsapi.Error](err); ok && ae.Code == "ResourceNotFoundException" || err == nil && v == "" {
		return nil, &channelOff{fmt.Sprintf("secret %s has no value yet: run `lambdaclaw channel set-secret %s --stack STACK`", id, name)}
	}
	if err != nil {
		return nil, err
	}
	chs, err := config.ParseChannelSecret(name, []byte(v))
	if err != nil {
		return nil, &channelOff{fmt.Sprintf("secret %s: %v", id, err)}
	}
	return chs, nil
}
