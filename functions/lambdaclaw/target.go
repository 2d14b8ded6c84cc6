package main

import (
	"context"
	"io"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// target is what `keys` and `status` read and change: the local server's
// database and agents, or a deployed stack's table and agents (--stack).
// The commands do the same on either.
type target struct {
	// agents lists the agents the server or the stack serves, sorted.
	agents func() ([]string, error)
	// defaultRate is the rate limit of a key created without --rate.
	defaultRate int
	// telegram says whether and how the Telegram channel runs.
	telegram string
	// stack is the deployment, nil for the local server.
	stack *deployment
	// open opens the store; only after every argument is checked, so that
	// bad input changes nothing.
	open func(ctx context.Context) (*adminDB, error)
}

// adminDB is the store of a target with its Telegram channel's state.
type adminDB struct {
	store.Store
	telegram store.Channel
}

// target returns the target of the command: the stack --stack names, or
// the local server configured by loadConfig. Locally, open creates the
// database when create is set and refuses a missing one otherwise.
func (s *stackFlags) target(ctx context.Context, loadConfig func() (*config.Config, error), create bool) (*target, error) {
	if s.remote() {
		d, err := s.open(ctx)
		if err != nil {
			return nil, err
		}
		if err := d.need(outTable); err != nil {
			return nil, err
		}
		tg := "disabled"
		if d.telegram() {
			tg = "enabled, webhook"
		}
		return &target{agents: func() ([]string, error) { return d.agents(ctx) }, defaultRate: config.DefaultKeyRate, telegram: tg, stack: d,
			open: func(ctx context.Context) (*adminDB, error) {
				db, err := d.store(ctx)
				if err != nil {
					return nil, err
				}
				return &adminDB{Store: db, telegram: db.Channel("tg")}, nil
			}}, nil
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	tg := "disabled"
	if cfg.Telegram.Enabled {
		tg = "enabled, " + cfg.Telegram.Mode
	}
	return &target{agents: func() ([]string, error) { return buildAgentNames(cfg) }, defaultRate: cfg.DefaultRatePerMinute, telegram: tg,
		open: func(context.Context) (*adminDB, error) {
			var db *sqlite.DB
			var err error
			if create {
				db, err = sqlite.Open(cfg.DBPath())
			} else {
				db, err = openExistingDB(cfg)
			}
			if err != nil {
				return nil, err
			}
			return &adminDB{Store: db, telegram: db.Channel("tg")}, nil
		}}, nil
}

// parseTarget adds --config, --stack and --region to f, parses args,
// which must hold n positional arguments, and returns them with the
// target of the command; the local database must exist.
func (f *cmdFlags) parseTarget(ctx context.Context, args []string, n int, stdout io.Writer) ([]string, *target, error) {
	loadConfig := f.withConfig()
	st := f.withStack()
	pos, err := f.parse(args, n, n, stdout)
	if err != nil {
		return nil, nil, err
	}
	if err := st.check(f); err != nil {
		return nil, nil, err
	}
	tg, err := st.target(ctx, loadConfig, false)
	return pos, tg, err
}
