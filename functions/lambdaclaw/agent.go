package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// confirmInput is where `agent delete` reads its confirmation, and
// stdinIsTerminal says whether a person may be typing there. Tests replace
// both.
var (
	confirmInput    io.Reader = os.Stdin
	stdinIsTerminal           = func() bool {
		fd := os.Stdin.Fd()
		return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
	}
)

// maxIdentityRead is how much of IDENTITY.md `agent list` reads.
const maxIdentityRead = 64 << 10

// agentCommand runs `lambdaclaw agent create|list|show|delete`, which
// manage the agent workspaces under $LAMBDACLAW_HOME/agents, and
// `agent push|pull` (sync.go), which copy one to or from a deployed stack.
func agentCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("agent", []string{"create", "list", "show", "delete", "push", "pull"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	if sub == "push" || sub == "pull" {
		return syncAgent(ctx, sub, args, stdout, stderr)
	}
	var fset *cmdFlags
	switch sub {
	case "create":
		fset = newFlags("agent create", "NAME", "Create the workspace of a new agent from the default templates and print its directory.\nA running `lambdaclaw serve` serves it at once, as the model NAME.", stderr)
	case "list":
		fset = newFlags("agent list", "", "List the agents: the name, emoji and type from IDENTITY.md, and whether the first run is pending.\nWith --stack, the names of the agents the deployed stack serves.", stderr)
	case "show":
		fset = newFlags("agent show", "NAME", "Print the bootstrap files of an agent in system prompt order, and list its daily logs.", stderr)
	default:
		fset = newFlags("agent delete", "NAME", "Delete the workspace of an agent and everything in it. At a terminal it asks first;\nwithout one, and for the default agent, it needs --yes.", stderr)
	}
	loadConfig := fset.withConfig()
	yes := new(bool)
	if sub == "delete" {
		yes = fset.Bool("yes", false, "delete without asking for confirmation")
	}
	// Only list works on a stack: the others manage local workspaces.
	want := 1
	st := &stackFlags{name: new(string), region: new(string)}
	if sub == "list" {
		want = 0
		st = fset.withStack()
	}
	pos, err := fset.parse(args[1:], want, want, stdout)
	if err != nil {
		return err
	}
	if err := st.check(fset); err != nil {
		return err
	}
	if st.remote() {
		return listStackAgents(ctx, st, stdout)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if sub == "list" {
		return listAgents(cfg.Home, stdout, stderr)
	}
	name := pos[0]
	if err := workspace.ValidName(name); err != nil {
		return err
	}
	switch sub {
	case "create":
		return createAgent(cfg.Home, name, stdout, stderr)
	case "show":
		return showAgent(cfg.Home, name, stdout)
	default:
		return deleteAgent(cfg, name, *yes, stderr)
	}
}

// noAgent is the error for an agent name that is not one of the agents;
// it lists them.
func noAgent(name string, agents []string) error {
	if len(agents) == 0 {
		return fmt.Errorf("no agent %q: there are no agents yet (`lambdaclaw agent create NAME` makes one)", name)
	}
	return fmt.Errorf("no agent %q; the agents are: %s", name, strings.Join(agents, ", "))
}

// missingAgent is noAgent with the workspaces under home; an error
// listing them is returned as is.
func missingAgent(home, name string) error {
	names, err := workspace.List(context.Background(), osroot.New(home))
	if err != nil {
		return err
	}
	return noAgent(name, names)
}

// createAgent makes a new workspace with the default templates, including
// the first-run BOOTSTRAP.md, and prints its directory.
func createAgent(home, name string, stdout, stderr io.Writer) error {
	dir := workspace.Dir(home, name)
	exists := fmt.Errorf("agent %q already exists in %s", name, dir)
	if _, err := os.Lstat(dir); err == nil {
		return exists
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	created, err := workspace.Create(context.Background(), osroot.New(home), name)
	if err != nil {
		return err
	}
	if !created {
		return exists
	}
	fmt.Fprintln(stdout, dir)
	fmt.Fprintf(stderr, "created agent %q; a running `lambdaclaw serve` serves it as model %q without a restart\n", name, name)
	return nil
}

// listAgents prints one agent per line: its name and a summary of its
// IDENTITY.md.
func listAgents(home string, stdout, stderr io.Writer) error {
	names, err := workspace.List(context.Background(), osroot.New(home))
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(stderr, "no agents yet: `lambdaclaw agent create NAME` makes one, and `lambdaclaw serve` makes the default agent")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%s\n", n, describeAgent(workspace.Dir(home, n)))
	}
	return tw.Flush()
}

// listStackAgents prints the agents a deployed stack serves, one name a
// line: the configured ones and every workspace in its bucket.
func listStackAgents(ctx context.Context, st *stackFlags, stdout io.Writer) error {
	d, err := st.open(ctx)
	if err != nil {
		return err
	}
	names, err := d.agents(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(stdout, n)
	}
	return nil
}

// describeAgent summarises the workspace at dir from the Name, Type and
// Emoji fields of its IDENTITY.md, like "🦞 Pinchy (AI assistant)", and
// notes a first-run ritual still pending.
func describeAgent(dir string) string {
	ctx, ws := context.Background(), osroot.New(dir)
	if _, err := ws.Stat(ctx, "."); err != nil {
		return "(workspace cannot be opened)"
	}
	fields := map[string]string{}
	if text, _, err := ws.ReadFile(ctx, "IDENTITY.md", maxIdentityRead); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(text))
		for sc.Scan() {
			line := strings.TrimLeft(strings.TrimSpace(sc.Text()), "-*+ ")
			key, value, ok := strings.Cut(line, ":")
			key = strings.ToLower(strings.Trim(key, "* "))
			value = strings.TrimSpace(strings.Trim(strings.TrimSpace(value), "*"))
			if ok && value != "" && fields[key] == "" {
				fields[key] = value
			}
		}
	}
	var parts []string
	if e := fields["emoji"]; e != "" {
		parts = append(parts, e)
	}
	if n := fields["name"]; n != "" {
		parts = append(parts, n)
	}
	if t := fields["type"]; t != "" {
		parts = append(parts, "("+t+")")
	}
	if len(parts) == 0 {
		parts = append(parts, "(no identity)")
	}
	if e, err := ws.Stat(ctx, workspace.BootstrapFile); err == nil && !e.IsDir() {
		parts = append(parts, "— first run pending")
	}
	return strings.Join(parts, " ")
}

// showAgent prints the bootstrap files of an agent in system prompt order,
// each under a header, then its daily logs.
func showAgent(home, name string, stdout io.Writer) error {
	dir := workspace.Dir(home, name)
	ctx, ws := context.Background(), osroot.New(dir)
	if _, err := ws.Stat(ctx, "."); errors.Is(err, fs.ErrNotExist) {
		return missingAgent(home, name)
	} else if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	fmt.Fprintf(w, "agent %s: %s\n", name, dir)
	for _, file := range workspace.Files() {
		text, _, err := ws.ReadFile(ctx, file, maxShownFile)
		switch {
		case errors.Is(err, fs.ErrNotExist) && file == workspace.BootstrapFile:
			fmt.Fprintf(w, "\n==> %s <== (absent: no first-run ritual pending)\n", file)
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(w, "\n==> %s <== (absent)\n", file)
		case err != nil:
			fmt.Fprintf(w, "\n==> %s <== (cannot be read: %v)\n", file, errors.Unwrap(err))
		default:
			fmt.Fprintf(w, "\n==> %s <==\n", file)
			w.Write(text)
			if len(text) > 0 && text[len(text)-1] != '\n' {
				w.WriteByte('\n')
			}
		}
	}
	logs, err := workspace.DailyLogs(ctx, ws)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		fmt.Fprintf(w, "\n==> %s/ <== (no daily logs)\n", workspace.DailyDir)
	} else {
		fmt.Fprintf(w, "\n==> %s/ <== (%d daily logs)\n", workspace.DailyDir, len(logs))
		for _, l := range logs {
			fmt.Fprintf(w, "%s/%s.md (%d bytes)\n", workspace.DailyDir, l.Date, l.Size)
		}
	}
	return w.Flush()
}

// maxShownFile is the most of a bootstrap file `agent show` prints.
const maxShownFile = 16 << 20

// deleteAgent removes an agent's workspace. Without --yes it asks a person
// at a terminal first; the default agent needs --yes.
func deleteAgent(cfg *config.Config, name string, yes bool, stderr io.Writer) error {
	dir := workspace.Dir(cfg.Home, name)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return missingAgent(cfg.Home, name)
	} else if err != nil {
		return err
	}
	if !yes {
		if name == config.DefaultAgent {
			return fmt.Errorf("the default agent can be deleted only with --yes: lambdaclaw agent delete %s --yes", name)
		}
		if !stdinIsTerminal() {
			return fmt.Errorf("refusing to delete agent %q without --yes: stdin is not a terminal", name)
		}
		fmt.Fprintf(stderr, "Delete agent %q and everything in %s? This cannot be undone. [y/N] ", name, dir)
		answer, _ := bufio.NewReader(confirmInput).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("agent %q not deleted", name)
		}
	}
	if err := workspace.Delete(context.Background(), osroot.New(cfg.Home), name); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "deleted agent %q (%s)\n", name, dir)
	if _, ok := cfg.Agents[name]; ok || name == config.DefaultAgent {
		fmt.Fprintf(stderr, "note: `lambdaclaw serve` creates a fresh workspace for %q on its next start", name)
		if ok {
			fmt.Fprint(stderr, " while the config file lists it")
		}
		fmt.Fprintln(stderr)
	}
	return nil
}
