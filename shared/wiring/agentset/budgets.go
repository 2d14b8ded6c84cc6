package agentset

import (
	"context"
	"errors"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Budgets returns the loop's token budgets over counters, as cfg's
// budgets section says, their notices sent to its notify targets:
// webhooks through web_fetch's address rules and cfg's outbound
// networks, Telegram chats through tg (nil: a telegram target is
// refused).
func Budgets(cfg *config.Config, counters store.Budgets, tg agent.Replier, tgChannel string) (*agent.Budgets, error) {
	b := cfg.Budgets
	out := &agent.Budgets{Store: counters, ResetHour: b.ResetHour, ReplyCap: b.ReplyCap, NoticeBelow: b.NotifyBelow}
	var notify notifiers
	for _, n := range b.Notify {
		kind, to, _ := strings.Cut(n, ":")
		switch kind {
		case "webhook":
			client, err := webhookClient(cfg)
			if err != nil {
				return nil, err
			}
			notify = append(notify, webhook.BudgetNotifier{Client: client, URL: to})
		case "telegram":
			if tg == nil {
				return nil, errors.New("config: budgets.notify names a telegram chat, but Telegram is not enabled")
			}
			notify = append(notify, chatNotifier{r: tg, channel: tgChannel, to: to})
		}
	}
	if len(notify) > 0 {
		out.Notifier = notify
	}
	return out, nil
}

// notifiers tell every one of them.
type notifiers []agent.BudgetNotifier

func (ns notifiers) BudgetLow(ctx context.Context, n agent.BudgetNotice) error {
	var errs []error
	for _, x := range ns {
		errs = append(errs, x.BudgetLow(ctx, n))
	}
	return errors.Join(errs...)
}

// chatNotifier sends a notice to a chat through its channel's replier,
// as the answer of a run named after the budget and its period (which
// the channel sends once).
type chatNotifier struct {
	r           agent.Replier
	channel, to string
}

func (c chatNotifier) BudgetLow(_ context.Context, n agent.BudgetNotice) error {
	st := agent.RunState{RunID: "budget-" + n.Scope + "-" + n.Window, Reply: agent.Reply{Channel: c.channel, To: c.to}}
	c.r.Finish(st, agent.Result{Content: n.Text()})
	return nil
}
