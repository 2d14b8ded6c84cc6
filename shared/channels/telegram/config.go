package telegram

import (
	"context"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// ChannelName is the channel of Telegram runs and the prefix of Telegram
// user ids ("tg:12345").
const ChannelName = "tg"

// Runner hands messages to the agent loop (agent.Driver implements it).
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
	Reset(ctx context.Context, sessionID string) error
}

// Config wires a Channel and its Replier.
type Config struct {
	Client *Client
	Store  store.Channel
	// Runner receives the messages of updates; New requires it.
	// NewReplier ignores it: NewChannel takes the runner instead.
	Runner Runner
	// Agent answers the bot's chats.
	Agent    string
	Identity agent.Identity
	Autonomy tool.Autonomy
	// AllowedUsers may use the bot; others need an access code.
	AllowedUsers []int64
	// AccessCodes each let one user in, once.
	AccessCodes []string
	Log         *slog.Logger
	// PollTimeout is getUpdates' long-poll timeout (default 30 s).
	PollTimeout time.Duration
	// DraftInterval is the least time between two updates of a streamed
	// draft, by sendMessageDraft or editMessageText (default 1 s).
	DraftInterval time.Duration
	// SeenTTL is how long handled update ids are remembered (default 48 h).
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
