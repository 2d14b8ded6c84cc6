package agentset

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// JobEngine is a schedule engine that also reads any owner's job by id.
type JobEngine interface {
	schedule.Engine
	Job(ctx context.Context, id string) (schedule.Job, error)
}

// CheckIns returns the replier of check-in runs of jobs, with the
// deliveries every deployment has: webhooks, through web_fetch's address
// rules and cfg's outbound networks. Channels add theirs (Telegram).
func CheckIns(cfg *config.Config, jobs JobEngine, log *slog.Logger) (*schedule.Replier, error) {
	client, err := webhookClient(cfg)
	if err != nil {
		return nil, err
	}
	return &schedule.Replier{Engine: jobs, Jobs: jobs.Job, Log: log,
		Deliver: map[string]schedule.Delivery{schedule.DeliverWebhook: webhook.Delivery(client)}}, nil
}

// webhookClient is the client of webhooks: web_fetch's address rules
// with cfg's outbound networks.
func webhookClient(cfg *config.Config) (*http.Client, error) {
	nets, err := cfg.Outbound.Networks()
	if err != nil {
		return nil, err
	}
	return webfetch.Client(&webfetch.Config{Allow: webfetch.AllowNetworks(nets), Timeout: 20 * time.Second})
}
