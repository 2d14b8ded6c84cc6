package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Name is the channel's name: its runs' reply channel and its owners'
// prefix ("whatsapp:<phone number id>:<wa_id>").
const Name = "whatsapp"

// Window is how long after a customer's last message a business may send
// them free-form messages (the customer service window); after it, only
// templates.
const Window = 24 * time.Hour

// State keeps the channel's small values (store.Channel's State and
// SetState): the time of each user's last message, and whether the
// template was sent since.
type State interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// Template is an approved message template, sent in place of a reply
// once the customer service window has closed.
type Template struct {
	Name, Language string
}

// Config configures a Platform and its Webhook.
type Config struct {
	// APIBase is the Graph API with its version (DefaultAPIBase when
	// empty); PhoneNumberID the business number; AccessToken the bearer
	// token (a system user's permanent token).
	APIBase, PhoneNumberID, AccessToken string
	// AppSecret signs the webhook's deliveries (X-Hub-Signature-256);
	// VerifyToken is what Meta sends back when the webhook is set up.
	AppSecret, VerifyToken string
	// Template, when named, is sent once the window has closed.
	Template Template
	// State keeps the window; required.
	State State
	// Now is the window's clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Platform is the channel.Platform of one WhatsApp business number. It
// sends free-form messages only within the customer service window and
// in place of them, once it has closed, the configured template (once
// until the user writes again) or a permanent error that says so.
type Platform struct {
	cfg    Config
	client *Client
}

var _ channel.Platform = (*Platform)(nil)

// New checks cfg and returns its Platform.
func New(cfg Config) (*Platform, error) {
	switch {
	case cfg.PhoneNumberID == "":
		return nil, errors.New("whatsapp: no phone number id")
	case cfg.AccessToken == "":
		return nil, errors.New("whatsapp: no access token")
	case cfg.State == nil:
		return nil, errors.New("whatsapp: no state store")
	case (cfg.Template.Name == "") != (cfg.Template.Language == ""):
		return nil, errors.New("whatsapp: a template needs both a name and a language")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Platform{cfg: cfg, client: NewClient(cfg.APIBase, cfg.PhoneNumberID, cfg.AccessToken)}, nil
}

// Client is the platform's API client.
func (p *Platform) Client() *Client { return p.client }

// Name returns Name.
func (p *Platform) Name() string { return Name }

// MaxLen is the longest text message.
func (p *Platform) MaxLen() int { return MaxTextLen }

// Send sends msg to msg.To (a user's wa_id, or a group): text, or reply
// buttons when it has some. Outside the customer service window, by the record of
// the user's last message or by WhatsApp's own refusal (131047), it
// sends the template instead.
func (p *Platform) Send(ctx context.Context, msg channel.Outgoing) (string, error) {
	return p.withinWindow(ctx, msg.To, func() (string, error) {
		if len(msg.Buttons) > 0 {
			return p.client.SendButtons(ctx, msg.To, msg.Text, msg.Buttons)
		}
		return p.client.SendText(ctx, msg.To, msg.Text)
	})
}

// withinWindow sends with send to the address to while the customer
// service window is open, by the record of the user's last message or
// by WhatsApp's own refusal (131047); outside it, the template.
func (p *Platform) withinWindow(ctx context.Context, to string, send func() (string, error)) (string, error) {
	// A group has no window of its own record: WhatsApp's refusal says.
	var last time.Time
	if !strings.HasPrefix(to, GroupPrefix) {
		var err error
		if last, err = p.lastIn(ctx, to); err != nil {
			return "", err
		}
	}
	if !last.IsZero() && p.cfg.Now().Sub(last) >= Window {
		return p.windowClosed(ctx, to, last)
	}
	id, err := send()
	if graphCode(err) == CodeReengagement {
		return p.windowClosed(ctx, to, last)
	}
	return id, err
}

// windowClosed sends the template to a user whose window has closed,
// unless it was sent since their last message (at last, zero if none is
// recorded), or refuses the message with a permanent error.
func (p *Platform) windowClosed(ctx context.Context, to string, last time.Time) (string, error) {
	since := "no message from them is recorded"
	if !last.IsZero() {
		since = "their last message was at " + last.UTC().Format(time.RFC3339)
	}
	refuse := func(why string) error {
		return &channel.Error{Platform: Name, Method: "POST /{phone-number-id}/messages", Code: strconv.Itoa(CodeReengagement), Permanent: true,
			Message: fmt.Sprintf("the 24-hour customer service window is closed (%s): %s", since, why)}
	}
	if p.cfg.Template.Name == "" {
		return "", refuse("WhatsApp takes only a template now; none is configured (channels.whatsapp.template)")
	}
	mark := strconv.FormatInt(last.Unix(), 10)
	if last.IsZero() {
		mark = "0"
	}
	key := templateKey(to)
	done, err := p.cfg.State.State(ctx, key)
	if err != nil {
		return "", fmt.Errorf("whatsapp: read %s: %w", key, err)
	}
	if done == mark {
		return "", refuse("the template " + p.cfg.Template.Name + " was sent already; the reply waits for them to write")
	}
	id, err := p.client.SendTemplate(ctx, to, p.cfg.Template.Name, p.cfg.Template.Language)
	if err != nil {
		return "", err
	}
	if err := p.cfg.State.SetState(ctx, key, mark); err != nil {
		// The template went out; only its record is missing, so a later
		// reply may send it once more.
		p.cfg.Log.Warn("whatsapp: record the template sent", "error", err)
	}
	p.cfg.Log.Info("whatsapp: window closed, sent the template in place of the reply", "template", p.cfg.Template.Name, "message_id", id)
	return id, nil
}

// lastIn returns when the user to last wrote, zero when no message of
// theirs is recorded.
func (p *Platform) lastIn(ctx context.Context, to string) (time.Time, error) {
	key := lastInKey(to)
	v, err := p.cfg.State.State(ctx, key)
	if err != nil {
		return time.Time{}, fmt.Errorf("whatsapp: read %s: %w", key, err)
	}
	if v == "" {
		return time.Time{}, nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("whatsapp: %s holds %q, not a time", key, v)
	}
	return time.Unix(s, 0), nil
}

// recordIn records that the user from wrote at at, unless a later
// message of theirs is recorded (Meta may deliver out of order).
func (p *Platform) recordIn(ctx context.Context, from string, at time.Time) error {
	last, err := p.lastIn(ctx, from)
	if err != nil {
		return err
	}
	if !at.After(last) {
		return nil
	}
	key := lastInKey(from)
	if err := p.cfg.State.SetState(ctx, key, strconv.FormatInt(at.Unix(), 10)); err != nil {
		return fmt.Errorf("whatsapp: write %s: %w", key, err)
	}
	return nil
}

func lastInKey(waID string) string   { return "last-in:" + waID }
func templateKey(waID string) string { return "template:" + waID }
