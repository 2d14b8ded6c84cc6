package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
	"gopkg.in/yaml.v3"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// The first run: `lambdaclaw serve` at a terminal, with no provider and no
// config file, asks for a provider, a model and a key, writes config.yaml
// and starts with it. The key is never echoed nor written in config.yaml:
// it goes to a file only its owner may read (config's {file: …}
// reference), or stays in an environment variable the config names. Not at
// a terminal, serve starts without a provider as before.

// readSecret reads a line from the terminal without echoing it.
var readSecret = func() (string, error) {
	b, err := term.ReadPassword(int(os.Stdin.Fd()))
	return string(b), err
}

// providerChoice is a kind of provider the setup offers.
type providerChoice struct {
	label, name, base, model string
	// keyEnv is the variable a key left empty is read from; "" means the
	// provider takes no key.
	keyEnv string
	// keyOptional says the server may take no key: a key left empty is
	// none, and no api_key is written (keyEnv is then unused).
	keyOptional bool
	bedrock     bool
	// askBase says the base URL must be asked for.
	askBase bool
}

var providerChoices = []providerChoice{
	{label: "OpenAI", name: "openai", base: "https://api.openai.com/v1", model: config.DefaultModel, keyEnv: "OPENAI_API_KEY"},
	{label: "OpenRouter", name: "openrouter", base: "https://openrouter.ai/api/v1", model: "openai/gpt-4o-mini", keyEnv: "OPENROUTER_API_KEY"},
	{label: "Ollama on this machine (no key)", name: "ollama", base: "http://localhost:11434/v1", model: "llama3.2", askBase: true},
	{label: "another OpenAI-compatible server (vLLM, LM Studio, …)", name: "custom", base: "http://localhost:8000/v1", model: config.DefaultModel, keyOptional: true, askBase: true},
	{label: "Amazon Bedrock (your AWS credentials)", name: "bedrock", model: "amazon.nova-lite-v1:0", bedrock: true},
}

// errSkipped says the person ended the setup (end of input).
var errSkipped = errors.New("setup skipped")

// needsSetup reports whether serve should offer the setup: no provider,
// no config file, and a person at the terminal.
func needsSetup(cfg *config.Config) bool {
	if len(cfg.Providers) > 0 || !stdinIsTerminal() {
		return false
	}
	_, err := os.Stat(cfg.Path)
	return errors.Is(err, os.ErrNotExist)
}

// firstRun runs the setup on in and out, writes the config file and the
// key, and returns the configuration reload reads then. Ending the input
// skips the setup: cfg is returned unchanged and nothing is written.
func firstRun(ctx context.Context, cfg *config.Config, in io.Reader, out io.Writer, reload func() (*config.Config, error)) (*config.Config, error) {
	s := &setupDialog{in: bufio.NewReader(io.LimitReader(in, 1<<20)), out: out, home: cfg.Home}
	fmt.Fprintf(out, "No LLM provider is configured. A short setup writes one to %s\n(Enter takes the [default]; Ctrl-D skips the setup).\n\n", cfg.Path)
	p, secret, err := s.ask()
	if errors.Is(err, errSkipped) {
		fmt.Fprintln(out, "\nSetup skipped: serving without a provider (set OPENAI_API_KEY, or see functions/lambdaclaw/README.md, Configuration).")
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if secret != "" {
		if err := config.WriteSecretFile(cfg.Home, p.APIKey.File, secret); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	if err := writeSetupConfig(cfg.Path, p); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\nWrote %s", cfg.Path)
	switch {
	case secret != "":
		fmt.Fprintf(out, " and the key to %s (readable only by you)", config.SecretPath(cfg.Home, p.APIKey.File))
	case p.APIKey.Env != "":
		fmt.Fprintf(out, "; the key is read from $%s, which must be set when serve starts", p.APIKey.Env)
	case p.Type == config.ProviderOpenAI:
		fmt.Fprint(out, "; no API key is sent to the server")
	}
	fmt.Fprintln(out, ".")
	next, err := reload()
	if err != nil {
		return nil, fmt.Errorf("setup: the written configuration does not load: %w", err)
	}
	// Say at once whether the provider answers; serve starts either way.
	d := newDoctor(next, 15*time.Second)
	for _, prov := range next.Providers {
		report(out, d.run(ctx, []check{{"provider " + prov.Name, func(ctx context.Context) finding { return d.checkProvider(ctx, prov) }}}))
	}
	fmt.Fprintln(out)
	return next, nil
}

// setupDialog asks the setup's questions.
type setupDialog struct {
	in   *bufio.Reader
	out  io.Writer
	home string
}

// ask asks for the provider and returns it, with the key typed, if any.
func (s *setupDialog) ask() (config.Provider, string, error) {
	fmt.Fprintln(s.out, "Provider:")
	for i, c := range providerChoices {
		fmt.Fprintf(s.out, "  %d) %s\n", i+1, c.label)
	}
	var c providerChoice
	for {
		a, err := s.line("Choose", "1")
		if err != nil {
			return config.Provider{}, "", err
		}
		n, err := strconv.Atoi(a)
		if err == nil && n >= 1 && n <= len(providerChoices) {
			c = providerChoices[n-1]
			break
		}
		fmt.Fprintf(s.out, "Type a number from 1 to %d.\n", len(providerChoices))
	}
	p := config.Provider{Name: c.name, Type: config.ProviderOpenAI, BaseURL: c.base}
	var err error
	if c.bedrock {
		p.Type, p.BaseURL = config.ProviderBedrock, ""
		if p.Region, err = s.line("AWS Region", or(getenv("AWS_REGION"), "us-east-1")); err != nil {
			return config.Provider{}, "", err
		}
	}
	if c.askBase {
		if p.BaseURL, err = s.line("Base URL of its API", c.base); err != nil {
			return config.Provider{}, "", err
		}
	}
	if p.Model, err = s.line("Model", c.model); err != nil {
		return config.Provider{}, "", err
	}
	switch {
	case c.keyOptional:
		fmt.Fprint(s.out, "API key (not shown as you type; empty: the server takes none): ")
	case c.keyEnv != "":
		fmt.Fprintf(s.out, "API key (not shown as you type; empty: read it from $%s when serve starts): ", c.keyEnv)
	default:
		return p, "", nil
	}
	key, err := readSecret()
	fmt.Fprintln(s.out)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return config.Provider{}, "", errSkipped
		}
		return config.Provider{}, "", fmt.Errorf("setup: read the key: %w", err)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		if !c.keyOptional {
			p.APIKey = config.Secret{Env: c.keyEnv}
		}
		return p, "", nil
	}
	p.APIKey = config.Secret{File: filepath.Join("secrets", c.name+".key")}
	return p, key, nil
}

// line asks a question and returns the answer, or def for an empty one.
func (s *setupDialog) line(question, def string) (string, error) {
	fmt.Fprintf(s.out, "%s [%s]: ", question, def)
	a, err := s.in.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", errSkipped
		}
		return "", fmt.Errorf("setup: %w", err)
	}
	if a = strings.TrimSpace(a); a == "" {
		return def, nil
	}
	return a, nil
}

// setupFile is the config file the setup writes.
type setupFile struct {
	Providers []setupProvider `yaml:"providers"`
}

type setupProvider struct {
	Name    string            `yaml:"name"`
	Type    string            `yaml:"type,omitempty"`
	BaseURL string            `yaml:"base_url,omitempty"`
	Region  string            `yaml:"region,omitempty"`
	Model   string            `yaml:"model"`
	APIKey  map[string]string `yaml:"api_key,omitempty,flow"`
}

// writeSetupConfig writes the config file holding the provider p, readable
// only by its owner; it never replaces an existing file.
func writeSetupConfig(path string, p config.Provider) error {
	sp := setupProvider{Name: p.Name, BaseURL: p.BaseURL, Region: p.Region, Model: p.Model}
	if p.Type == config.ProviderBedrock {
		sp.Type = p.Type
	}
	switch {
	case p.APIKey.File != "":
		sp.APIKey = map[string]string{"file": p.APIKey.File}
	case p.APIKey.Env != "":
		sp.APIKey = map[string]string{"env": p.APIKey.Env}
	}
	body, err := yaml.Marshal(setupFile{Providers: []setupProvider{sp}})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	head := "# Written by the first-run setup of lambdaclaw serve; functions/lambdaclaw/README.md, Configuration, lists every setting.\n" +
		"# The API key is not in this file: api_key names the file or the environment variable holding it.\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := f.WriteString(head + string(body)); err != nil {
		f.Close()
		return fmt.Errorf("setup: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("setup: write %s: %w", path, err)
	}
	return nil
}
