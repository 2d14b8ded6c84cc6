package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// maxKeyName bounds the name of a key, in characters.
const maxKeyName = 64

// keys runs `lambdaclaw keys create|list|revoke`, on the local database
// or, with --stack, on a deployed stack's table. Every flag and argument
// is checked before the database is opened, so bad input changes nothing.
func keys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("keys", []string{"create", "list", "revoke"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	if sub == "create" {
		return createKeyCommand(ctx, args[1:], stdout, stderr)
	}
	fs, want := newFlags("keys list", "", "List the API keys: their id, name, prefix, autonomy, rate limit, agents and status.", stderr), 0
	if sub == "revoke" {
		fs, want = newFlags("keys revoke", "ID", "Revoke an API key (its ID is in `lambdaclaw keys list`): it is refused from then on, also on open WebSocket connections.", stderr), 1
	}
	pos, tg, err := fs.parseTarget(ctx, args[1:], want, stdout)
	if err != nil {
		return err
	}
	db, err := tg.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if sub == "list" {
		return listKeys(ctx, db, stdout)
	}
	return revokeKey(ctx, db, pos[0], stderr)
}

// createKeyCommand is `lambdaclaw keys create`.
func createKeyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys create", "", "Create an API key and print it (only the key, on stdout). The secret is shown once:\nonly its hash is stored, in the local database or, with --stack, in the stack's table.", stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	name := fs.String("name", "", "a name to tell the key apart (at most 64 characters)")
	agents := fs.String("agents", "", "comma-separated agents the key may use (default all)")
	autonomy := fs.String("autonomy", tool.Supervised.String(), "autonomy level: read_only, supervised or full")
	rate := fs.Int("rate", 0, "requests per minute, at least 1 (default from the config file, 120 without one or with --stack)")
	admin := fs.Bool("admin", false, "an admin key: it may also list, create and revoke keys in the web console")
	daily := fs.Int64("daily-tokens", 0, "model tokens the key's runs may spend per day, replenished at budgets.reset_hour (default no limit)")
	monthly := fs.Int64("monthly-tokens", 0, "model tokens the key's runs may spend per month (default no limit)")
	deny := fs.String("deny-tools", "", "comma-separated tools the key's runs may never call, whichever agent they use")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if *daily < 0 || *monthly < 0 {
		return errors.New("--daily-tokens and --monthly-tokens are numbers of tokens, 0 (no limit) or more")
	}
	var denied []string
	for t := range strings.SplitSeq(*deny, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(denied, t) {
			denied = append(denied, t)
		}
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(*name); n > maxKeyName {
		return fmt.Errorf("--name is %d characters long; at most %d are allowed", n, maxKeyName)
	}
	if strings.ContainsFunc(*name, unicode.IsControl) {
		return fmt.Errorf("--name %q has control characters", *name)
	}
	if _, err := tool.ParseAutonomy(*autonomy); err != nil {
		return fmt.Errorf("--autonomy: %w", err)
	}
	rateSet := fs.isSet("rate")
	if rateSet && *rate < 1 {
		return fmt.Errorf("--rate %d: a key's rate limit is a number of requests per minute, at least 1", *rate)
	}
	tg, err := st.target(ctx, loadConfig, true)
	if err != nil {
		return err
	}
	var list []string
	if *agents != "" {
		known, err := tg.agents()
		if err != nil {
			return err
		}
		if list, err = keyAgents(known, *agents); err != nil {
			return err
		}
	}
	r := *rate
	if !rateSet {
		r = tg.defaultRate
	}
	db, err := tg.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	key, _, err := apikey.Create(ctx, db, store.APIKey{Name: *name, Agents: list, Autonomy: *autonomy, RatePerMinute: r, Admin: *admin,
		DailyTokens: *daily, MonthlyTokens: *monthly, DenyTools: denied})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// keyAgents checks the --agents of a new key: a comma-separated list of
// the known agents (those serve serves, see buildAgentNames, or the
// stack's). Repeated names count once.
func keyAgents(known []string, value string) ([]string, error) {
	var list []string
	for a := range strings.SplitSeq(value, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("--agents %q: an agent name is empty", value)
		}
		if err := workspace.ValidName(a); err != nil {
			return nil, fmt.Errorf("--agents: %w", err)
		}
		if !slices.Contains(known, a) {
			return nil, fmt.Errorf("--agents: %w", noAgent(a, known))
		}
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list, nil
}

// openExistingDB opens the database of cfg, for a command that reads or
// changes what is there: it does not create one.
func openExistingDB(cfg *config.Config) (*sqlite.DB, error) {
	path := cfg.DBPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s yet: `lambdaclaw serve` or `lambdaclaw keys create` makes it", path)
	} else if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return sqlite.Open(path)
}

// listKeys prints the keys as a table.
func listKeys(ctx context.Context, db store.Keys, stdout io.Writer) error {
	ks, err := db.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKEY\tAUTONOMY\tRATE/MIN\tAGENTS\tCREATED\tSTATUS")
	for _, k := range ks {
		status := "active"
		if k.Admin {
			status = "active, admin"
		}
		if k.RevokedAt != nil {
			status = "revoked " + k.RevokedAt.Format(time.DateTime)
		}
		ag := strings.Join(k.Agents, ",")
		if ag == "" {
			ag = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%d\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.Autonomy, k.RatePerMinute, ag, k.CreatedAt.Format(time.DateTime), status)
	}
	return tw.Flush()
}

// revokeKey revokes the key with the id; an unknown id or a key revoked
// already is an error.
func revokeKey(ctx context.Context, db store.Keys, id string, stderr io.Writer) error {
	ks, err := db.ListKeys(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ks, func(k store.APIKey) bool { return k.ID == id })
	switch {
	case i < 0:
		return fmt.Errorf("no key with id %q (see `lambdaclaw keys list`)", id)
	case ks[i].RevokedAt != nil:
		return fmt.Errorf("key %s was revoked already, on %s", id, ks[i].RevokedAt.Format(time.DateTime))
	}
	if err := db.RevokeKey(ctx, id, time.Now().UTC()); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "revoked", id)
	return nil
}
