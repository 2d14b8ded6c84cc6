package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// cmdFlags is the flag set of one command with what its --help prints.
type cmdFlags struct {
	*flag.FlagSet
	// synopsis is the command line, as "lambdaclaw agent show NAME";
	// about says what the command does.
	synopsis, about string
	stderr          io.Writer
}

// newFlags returns the flag set of `lambdaclaw name`, whose arguments are
// args (as "NAME", or empty). Parse errors go to stderr.
func newFlags(name, args, about string, stderr io.Writer) *cmdFlags {
	f := &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), about: about, stderr: stderr}
	f.synopsis = "lambdaclaw " + name
	if args != "" {
		f.synopsis += " " + args
	}
	f.SetOutput(stderr)
	f.Usage = func() {} // parse prints the usage itself, on the right stream
	return f
}

// withConfig adds the --config flag; load reads the config file it names
// (after parse), else the default one.
func (f *cmdFlags) withConfig() (load func() (*config.Config, error)) {
	path := f.String("config", "", "config file (default $LAMBDACLAW_HOME/config.yaml)")
	return func() (*config.Config, error) { return config.Load(*path, getenv) }
}

// isSet reports whether the flag name was given.
func (f *cmdFlags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// printUsage writes the synopsis, what the command does and its flags.
func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s", f.synopsis)
	hasFlags := false
	f.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, " [flags]")
	}
	fmt.Fprintf(w, "\n\n%s\n", f.about)
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(f.stderr)
	}
}

// parse parses args, with flags anywhere among them, and returns the
// positional arguments, of which there must be min to max (max < 0: any
// number). -h and --help print the usage on stdout and return errHelp. An
// unknown flag, a bad value, a flag set to the empty string or a wrong
// number of arguments prints the problem and the usage on stderr and
// returns errUsage.
func (f *cmdFlags) parse(args []string, min, max int, stdout io.Writer) ([]string, error) {
	pos, err := parseInterspersed(f.FlagSet, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.printUsage(stdout)
		return nil, errHelp
	case err != nil:
		// The flag package has printed the problem.
		f.printUsage(f.stderr)
		return nil, errUsage
	}
	var problem string
	f.Visit(func(fl *flag.Flag) {
		if problem == "" && fl.Value.String() == "" {
			problem = fmt.Sprintf("--%s is empty", fl.Name)
		}
	})
	switch {
	case problem != "":
	case len(pos) < min:
		problem = "missing arguments"
	case max >= 0 && len(pos) > max:
		problem = fmt.Sprintf("unexpected argument %q", pos[max])
	default:
		return pos, nil
	}
	fmt.Fprintln(f.stderr, problem)
	f.printUsage(f.stderr)
	return nil, errUsage
}

// parseInterspersed parses flags placed anywhere among args, as in
// `agent delete NAME --yes`, and returns the other arguments in order.
// After "--" every argument is positional.
func parseInterspersed(fset *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		rest := fset.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// subcommand picks the subcommand of the group `lambdaclaw group` named by
// args[0], one of subs. Without one it prints the group's usage on stderr
// (errUsage); "help", -h and --help print it on stdout (errHelp).
func subcommand(group string, subs []string, args []string, stdout, stderr io.Writer) (string, error) {
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, groupUsage(group))
		return "", errUsage
	case args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		fmt.Fprint(stdout, groupUsage(group))
		return "", errHelp
	case !slices.Contains(subs, args[0]):
		fmt.Fprintf(stderr, "unknown %s command %q\n\n%s", group, args[0], groupUsage(group))
		return "", errUsage
	}
	return args[0], nil
}

// groupUsage is the part of the usage about the commands of a group.
func groupUsage(group string) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for line := range strings.Lines(usage) {
		if strings.HasPrefix(line, "  lambdaclaw "+group+" ") {
			b.WriteString(line)
		}
	}
	fmt.Fprintf(&b, "\nRun \"lambdaclaw %s COMMAND --help\" for the flags of a command.\n", group)
	return b.String()
}
