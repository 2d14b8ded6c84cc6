package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/config"
	"github.com/lambdaclaw/lambdaclaw/shared/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
	"github.com/lambdaclaw/lambdaclaw/shared/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/workspace"
)

func keys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file")
	name := fs.String("name", "", "a name to tell the key apart")
	agents := fs.String("agents", "", "comma-separated agents the key may use (default all)")
	autonomy := fs.String("autonomy", "supervised", "autonomy level: read_only, supervised or full")
	rate := fs.Int("rate", 0, "requests per minute (default from config)")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	cfg, err := config.Load(*cfgPath, getenv)
	if err != nil {
		return err
	}
	db, err := sqlite.Open(cfg.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()

	switch args[0] {
	case "create":
		if _, err := tool.ParseAutonomy(*autonomy); err != nil {
			return err
		}
		var list []string
		for _, a := range strings.Split(*agents, ",") {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			if err := workspace.ValidName(a); err != nil {
				return fmt.Errorf("--agents: %w", err)
			}
			list = append(list, a)
		}
		r := *rate
		if r <= 0 {
			r = cfg.DefaultRatePerMinute
		}
		key, err := createKey(ctx, db, *name, list, *autonomy, r)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, key)
		return nil
	case "list":
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
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("usage: lambdaclaw keys revoke ID")
		}
		if err := db.RevokeKey(ctx, fs.Arg(0), time.Now().UTC()); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no key with id %q (see `lambdaclaw keys list`)", fs.Arg(0))
			}
			return err
		}
		fmt.Fprintln(stderr, "revoked", fs.Arg(0))
		return nil
	default:
		fmt.Fprintf(stderr, "unknown keys command %q\n\n%s", args[0], usage)
		return errUsage
	}
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
