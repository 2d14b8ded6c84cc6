package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Runner hands messages to the agent loop (agent.Driver and sfn.Driver
// implement it).
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
	Reset(ctx context.Context, sessionID string) error
}

// Stopper is a Runner that can cancel the run a session works on (/stop).
type Stopper interface {
	Stop(ctx context.Context, sessionID string) (stopped bool, err error)
}

// Groups says how the channel behaves in groups.
type Groups struct {
	// Respond is "mention" (the default: answer a message that mentions
	// the bot or replies to it) or "all" (answer every message).
	Respond string
	// Context is how many of a conversation's latest messages not
	// addressed to the bot are kept and given with the next one that is
	// (default 20; negative keeps none).
	Context int
}

// The limits of group context: each message kept is cut to
// MaxContextBytes, and at most MaxContext are kept.
const (
	DefaultContext  = 20
	MaxContext      = 100
	MaxContextBytes = 500
)

// Config wires a Channel and its Replier.
type Config struct {
	Platform Platform
	// Store keeps the channel's state; it is bound to Platform.Name().
	Store store.Channel
	// Runner receives the messages; NewReplier ignores it (NewChannel
	// takes the runner).
	Runner Runner
	// Agent answers the channel's conversations.
	Agent    string
	Identity agent.Identity
	Autonomy tool.Autonomy
	// AllowedUsers may use the channel: Inbound.User ids, or
	// "<workspace>:<user>" for a user of one workspace. Others need an
	// access code.
	AllowedUsers []string
	// AccessCodes each let one user in, once.
	AccessCodes []string
	Groups      Groups
	// Media says what is done with the files people send.
	Media Media
	Log   *slog.Logger
	// DraftInterval is the least time between two updates of a streamed
	// draft (default 1 s).
	DraftInterval time.Duration
	// SeenTTL is how long handled deliveries are remembered (default 48 h).
	SeenTTL time.Duration
	// Serverless is for a process that is frozen between requests (a
	// Lambda function), where Run is not used: no streamed drafts, one
	// typing action instead of a repeating one, and Finish and Approval
	// deliver the outbox themselves (Flush, waiting up to FlushWait for
	// retries) before they return.
	Serverless bool
	// FlushWait bounds the retries of a serverless Flush (default 10 s).
	FlushWait time.Duration
	// Now is the clock of access code lockouts; nil means time.Now.
	Now func() time.Time
}

// check validates cfg and fills in the defaults.
func (cfg *Config) check() error {
	if cfg.Platform == nil || cfg.Store == nil {
		return errors.New("channel: Platform and Store are required")
	}
	name := cfg.Platform.Name()
	if name == "" || cfg.Platform.MaxLen() < 16 {
		return fmt.Errorf("channel %q: a platform needs a name and a MaxLen of at least 16", name)
	}
	switch cfg.Groups.Respond {
	case "":
		cfg.Groups.Respond = "mention"
	case "mention", "all":
	default:
		return fmt.Errorf("channel %s: groups respond is %q; want mention or all", name, cfg.Groups.Respond)
	}
	switch {
	case cfg.Groups.Context == 0:
		cfg.Groups.Context = DefaultContext
	case cfg.Groups.Context > MaxContext:
		return fmt.Errorf("channel %s: groups context is %d; at most %d", name, cfg.Groups.Context, MaxContext)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.DraftInterval <= 0 {
		cfg.DraftInterval = time.Second
	}
	if cfg.SeenTTL <= 0 {
		cfg.SeenTTL = 48 * time.Hour
	}
	if cfg.FlushWait <= 0 {
		cfg.FlushWait = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return nil
}
