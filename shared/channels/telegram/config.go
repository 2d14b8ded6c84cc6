package telegram

import (
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// ChannelName is the channel of Telegram runs and the prefix of Telegram
// user ids ("tg:12345").
const ChannelName = "tg"

// Config wires a Channel and its Replier.
type Config struct {
	Client *Client
	Store  store.Channel
	// Runner receives the messages of updates; New requires it.
	// NewReplier ignores it: NewChannel takes the runner instead.
	Runner channel.Runner
	// Agent answers the bot's chats.
	Agent    string
	Identity agent.Identity
	Autonomy tool.Autonomy
	// AllowedUsers may use the bot; others need an access code.
	AllowedUsers []int64
	// AccessCodes each let one user in, once.
	AccessCodes []string
	// Groups says when the bot answers in groups (when mentioned or
	// replied to, by default) and how many earlier messages it is given.
	Groups channel.Groups
	// Media says what is done with photos, documents and voice notes.
	Media channel.Media
	Log   *slog.Logger
	// PollTimeout is getUpdates' long-poll timeout (default 30 s).
	PollTimeout time.Duration
	// DraftInterval is the least time between two updates of a streamed
	// draft, by sendMessageDraft or editMessageText (default 1 s).
	DraftInterval time.Duration
	// SeenTTL is how long handled update ids are remembered (default 48 h).
	SeenTTL time.Duration
	// Serverless is for a process that is frozen between requests (a
	// Lambda function), where Run is not used: see channel.Config.
	Serverless bool
	// FlushWait bounds the retries of a serverless Flush (default 10 s).
	FlushWait time.Duration
	// Now is the clock of access code lockouts; nil means time.Now.
	Now func() time.Time
}

// engine is the channel engine's config of cfg.
func (cfg Config) engine() (channel.Config, error) {
	if cfg.Client == nil {
		return channel.Config{}, errors.New("telegram: Client is required")
	}
	users := make([]string, 0, len(cfg.AllowedUsers))
	for _, u := range cfg.AllowedUsers {
		users = append(users, strconv.FormatInt(u, 10))
	}
	return channel.Config{Platform: NewPlatform(cfg.Client, cfg.Log), Store: cfg.Store, Runner: cfg.Runner, Agent: cfg.Agent,
		Identity: cfg.Identity, Autonomy: cfg.Autonomy, AllowedUsers: users, AccessCodes: cfg.AccessCodes, Groups: cfg.Groups, Media: cfg.Media,
		Log: cfg.Log, DraftInterval: cfg.DraftInterval, SeenTTL: cfg.SeenTTL, Serverless: cfg.Serverless,
		FlushWait: cfg.FlushWait, Now: cfg.Now}, nil
}
