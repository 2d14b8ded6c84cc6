package main

import (
	"context"
	"errors"
	"flag"
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
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// maxKeyName bounds the name of a key, in characters.
const maxKeyName = 64

// keys runs `lambdaclaw keys create|list|revoke`. Every flag and argument
// is checked before the database is opened, so bad input changes nothing.
func keys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("keys", []string{"create", "list", "revoke"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return createKeyCommand(ctx, args[1:], stdout, stderr)
	case "list":
		fs := newFlags("keys list", "", "List the API keys: their id, name, prefix, autonomy, rate limit, agents and status.", stderr)
		loadConfig := fs.withConfig()
		if _, err := fs.parse(args[1:], 0, 0, stdout); err != nil {
			return err
		}
		_, db, err := openExistingDB(loadConfig)
		if err != nil {
			return err
		}
		defer db.Close()
		return listKeys(ctx, db, stdout)
	default:
		fs := newFlags("keys revoke", "ID", "Revoke an API key (its ID is in `lambdaclaw keys list`): it is refused from then on, also on open WebSocket connections.", stderr)
		loadConfig := fs.withConfig()
		pos, err := fs.parse(args[1:], 1, 1, stdout)
		if err != nil {
			return err
		}
		_, db, err := openExistingDB(loadConfig)
		if err != nil {
			return err
		}
		defer db.Close()
		return revokeKey(ctx, db, pos[0], stderr)
	}
}

// createKeyCommand is `lambdaclaw keys create`.
func createKeyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys create", "", "Create an API key and print it (only the key, on stdout). The secret is shown once:\nonly its hash is stored.", stderr)
	loadConfig := fs.withConfig()
	name := fs.String("name", "", "a name to tell the key apart (at most 64 characters)")
	agents := fs.String("agents", "", "comma-separated agents the key may use (default all)")
	autonomy := fs.String("autonomy", tool.Supervised.String(), "autonomy level: read_only, supervised or full")
	rate := fs.Int("rate", 0, "requests per minute, at least 1 (default from the config file, 120 without one)")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
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
	rateSet := false
	fs.Visit(func(f *flag.Flag) { rateSet = rateSet || f.Name == "rate" })
	if rateSet && *rate < 1 {
		return fmt.Errorf("--rate %d: a key's rate limit is a number of requests per minute, at least 1", *rate)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	var list []string
	if *agents != "" {
		if list, err = keyAgents(cfg, *agents); err != nil {
			return err
		}
	}
	r := *rate
	if !rateSet {
		r = cfg.DefaultRatePerMinute
	}
	db, err := sqlite.Open(cfg.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()
	key, err := createKey(ctx, db, *name, list, *autonomy, r)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// keyAgents checks the --agents of a new key: a comma-separated list of
// the agents serve serves (see buildAgentNames). Repeated names count
// once.
func keyAgents(cfg *config.Config, value string) ([]string, error) {
	known, err := buildAgentNames(cfg)
	if err != nil {
		return nil, err
	}
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

// openExistingDB loads the config and opens its database, for a command
// that reads or changes what is there: it does not create one.
func openExistingDB(loadConfig func() (*config.Config, error)) (*config.Config, *sqlite.DB, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	path := cfg.DBPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no database at %s yet: `lambdaclaw serve` or `lambdaclaw keys create` makes it", path)
	} else if err != nil {
		return nil, nil, fmt.Errorf("database: %w", err)
	}
	db, err := sqlite.Open(path)
	return cfg, db, err
}

// listKeys prints the keys as a table.
func listKeys(ctx context.Context, db *sqlite.DB, stdout io.Writer) error {
	ks, err := db.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKEY\tAUTONOMY\tRATE/MIN\tAGENTS\tCREATED\tSTATUS")
	for _, k := range ks {
		status := "active"
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
func revokeKey(ctx context.Context, db *sqlite.DB, id string, stderr io.Writer) error {
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

// createKey stores a new key and returns its secret, which is never
// stored.
func createKey(ctx context.Context, keys store.Keys, name string, agents []string, autonomy string, rate int) (string, error) {
	key, hash, prefix, err := apikey.New()
	if err != nil {
		return "", err
	}
	k := store.APIKey{
		ID: "key_" + agent.NewID()[:12], Name: name, Hash: hash, Prefix: prefix, Agents: agents,
		Autonomy: autonomy, RatePerMinute: rate, CreatedAt: time.Now().UTC(),
	}
	if err := keys.CreateKey(ctx, k); err != nil {
		return "", fmt.Errorf("store key: %w", err)
	}
	return key, nil
}
