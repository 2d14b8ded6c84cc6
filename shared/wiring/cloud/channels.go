package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
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
	r.late = map[string]*lateChannel{}
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
				// Its secret may be set while this instance lives:
				// the channel comes on when next asked for.
				l := &lateChannel{root: r, name: name, id: id}
				r.late[name] = l
				router[name] = l
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

// lateRecheck is how often a channel left out for want of its secret's
// value is looked at again, at most: each look is a paid request.
const lateRecheck = time.Minute

// lateChannel stands in the Router for a channel whose secret had no
// value when the function started, so that a channel set after that
// (`lambdaclaw channel set-secret`) loses no reply of a warm instance:
// asked for a reply, it reads the secret again (at once the first time,
// then at most once per lateRecheck) and, once it has a value, builds the channel and hands it
// everything from then on. Until then a run's reply on the channel is
// logged as undeliverable (its webhook answered 503, so no run of it
// should exist).
type lateChannel struct {
	root     *Root
	name, id string

	mu   sync.Mutex
	next time.Time
	ch   *channelset.Channel
}

// channel returns the channel once it could be built, else nil.
func (l *lateChannel) channel(ctx context.Context) *channelset.Channel {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch != nil || time.Now().Before(l.next) {
		return l.ch
	}
	l.next = time.Now().Add(lateRecheck)
	chs, err := l.root.channelConfig(ctx, l.name, l.id)
	if err != nil {
		l.root.Log.Warn("channel still not configured", "channel", l.name, "reason", err.Error())
		return nil
	}
	built, err := channelset.Build(ctx, chs, channelset.Env{Store: l.root.Store.Channel, Identity: l.root.Identity, Log: l.root.Log, Serverless: true})
	if err == nil && len(built) == 1 {
		err = built[0].Start(l.root.Driver)
	}
	if err != nil || len(built) != 1 {
		l.root.Log.Error("channel not started", "channel", l.name, "error", err)
		return nil
	}
	l.ch = built[0]
	l.root.Log.Info("channel configured since the function started", "channel", l.name)
	return l.ch
}

// replier returns the channel's replier, or nil with the reason logged.
func (l *lateChannel) replier(run agent.RunState) *channel.Replier {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c := l.channel(ctx); c != nil {
		return c.Replier
	}
	l.root.Log.Error("reply on a channel not configured, not delivered", "channel", l.name, "run_id", run.RunID)
	return nil
}

// LateChannel returns the channel name left out at start for want of its
// secret's value, if it can be built now (see lateChannel), else nil.
func (r *Root) LateChannel(ctx context.Context, name string) *channelset.Channel {
	if l := r.late[name]; l != nil {
		return l.channel(ctx)
	}
	return nil
}

// Delta implements agent.Replier.
func (l *lateChannel) Delta(run agent.RunState, text string) {
	if rp := l.replier(run); rp != nil {
		rp.Delta(run, text)
	}
}

// Approval implements agent.Replier.
func (l *lateChannel) Approval(run agent.RunState, a store.Approval) {
	if rp := l.replier(run); rp != nil {
		rp.Approval(run, a)
	}
}

// Finish implements agent.Replier.
func (l *lateChannel) Finish(run agent.RunState, res agent.Result) {
	if rp := l.replier(run); rp != nil {
		rp.Finish(run, res)
	}
}

// Outbox implements agent.Outboxer.
func (l *lateChannel) Outbox(run agent.RunState, res agent.Result) []store.OutboxMessage {
	if rp := l.replier(run); rp != nil {
		return rp.Outbox(run, res)
	}
	return nil
}

// ApprovalOutbox implements agent.Outboxer.
func (l *lateChannel) ApprovalOutbox(run agent.RunState, a store.Approval) []store.OutboxMessage {
	if rp := l.replier(run); rp != nil {
		return rp.ApprovalOutbox(run, a)
	}
	return nil
}

// Committed implements agent.Outboxer.
func (l *lateChannel) Committed(run agent.RunState, res agent.Result) {
	if rp := l.replier(run); rp != nil {
		rp.Committed(run, res)
	}
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
