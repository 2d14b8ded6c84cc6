// Package skill is the skill system of seed 004 ("Skill system"). A skill
// is a directory holding a SKILL.md file: YAML front-matter with a name, a
// description and optional metadata (requirements, an emoji), then markdown
// instructions for the model.
//
// Skills are found at three levels, lowest to highest precedence: bundled
// with lambdaclaw, global (<home>/skills/<name>/SKILL.md) and per agent
// (<home>/agents/<agent>/skills/<name>/SKILL.md). A Catalog discovers them,
// Filter keeps those whose requirements (binaries, environment variables,
// operating system) are met, Section lists them in the system prompt and the
// load_skill tool (LoadTool) hands a skill's instructions to the model when
// it decides to use one. The prompt carries only names and descriptions, so
// many skills cost little context.
//
// The format is the one OpenClaw and BeamClaw skills use, so their skills
// work unchanged: metadata may be a YAML map or a JSON object string, and
// requirements may sit under a "lambdaclaw", "beamclaw" or "openclaw" key:
//
//	---
//	name: github
//	description: Work with GitHub issues and pull requests through the gh CLI.
//	metadata: {"openclaw": {"emoji": "🐙", "requires": {"bins": ["gh"]}}}
//	---
//	# GitHub
//	...
package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// MaxSize is the largest SKILL.md read; larger files are skipped.
const MaxSize = 128 << 10

// Source is the level a skill was found at. A higher level replaces a lower
// one's skill of the same name.
type Source int

// The levels, lowest precedence first.
const (
	Bundled Source = iota
	Global
	Agent
)

var sourceNames = []string{"bundled", "global", "agent"}

// String names the level: "bundled", "global" or "agent".
func (s Source) String() string {
	if s < 0 || int(s) >= len(sourceNames) {
		return fmt.Sprintf("source(%d)", int(s))
	}
	return sourceNames[s]
}

// Skill is one parsed SKILL.md.
type Skill struct {
	Name        string
	Description string
	// Emoji decorates the skill in the system prompt; it may be empty.
	Emoji    string
	Requires Requirements
	// Metadata is the front-matter's metadata as decoded, for the fields
	// this package does not interpret (install specs, skill types).
	Metadata map[string]any
	// Body is the markdown after the front-matter, trimmed.
	Body string
	// Source is the level the skill was found at, and Path its SKILL.md
	// ("bundled/<dir>/SKILL.md" for bundled skills). Parse leaves them
	// zero; the Catalog sets them.
	Source Source
	Path   string
}

// Requirements are what a skill needs from the machine it runs on.
type Requirements struct {
	// Bins must all be executables on PATH.
	Bins []string
	// AnyBins needs at least one of its executables on PATH.
	AnyBins []string
	// Env must all be set to non-empty values.
	Env []string
	// OS lists the operating systems (GOOS values) the skill works on;
	// empty means any.
	OS []string
}

// namePattern is what a skill's name must match: it is shown to the model
// and used to load the skill, never as a path.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

// CheckName reports whether name can name a skill.
func CheckName(name string) error {
	if !namePattern().MatchString(name) {
		return fmt.Errorf("invalid skill name %q: use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit", name)
	}
	return nil
}

// namespaces are the metadata keys under which the skill ecosystems nest
// their settings, in the order they are looked for. clawdbot and clawdis
// are OpenClaw's former names, still accepted by it.
var namespaces = []string{"lambdaclaw", "beamclaw", "openclaw", "clawdbot", "clawdis"}

// ErrNoFrontMatter is returned by Parse for a file that does not start
// with a "---" line.
var ErrNoFrontMatter = errors.New("SKILL.md does not start with YAML front-matter (a line \"---\", name: and description: fields, then another \"---\")")

// Parse reads a SKILL.md file. The front-matter must have a valid name and
// a description; metadata, when present, must be a map or a JSON object
// string, with well-formed requirements.
func Parse(data []byte) (Skill, error) {
	if !utf8.Valid(data) {
		return Skill{}, errors.New("SKILL.md is not valid UTF-8")
	}
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\uFEFF"))), "\r\n", "\n")
	front, body, err := split(text)
	if err != nil {
		return Skill{}, err
	}
	var fm struct {
		Name        string    `yaml:"name"`
		Description string    `yaml:"description"`
		Metadata    yaml.Node `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		return Skill{}, fmt.Errorf("front-matter is not valid YAML: %w", err)
	}
	s := Skill{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Body: strings.TrimSpace(body)}
	switch {
	case s.Name == "":
		return Skill{}, errors.New("front-matter has no name")
	case s.Description == "":
		return Skill{}, fmt.Errorf("skill %q: front-matter has no description", s.Name)
	}
	if err := CheckName(s.Name); err != nil {
		return Skill{}, err
	}
	if s.Metadata, err = decodeMetadata(&fm.Metadata); err != nil {
		return Skill{}, fmt.Errorf("skill %q: %w", s.Name, err)
	}
	if s.Emoji, s.Requires, err = interpret(s.Metadata); err != nil {
		return Skill{}, fmt.Errorf("skill %q: %w", s.Name, err)
	}
	return s, nil
}

// split separates the front-matter from the body. The front-matter sits
// between a first line "---" and the next line "---".
func split(text string) (front, body string, err error) {
	line, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(line, " \t") != "---" {
		return "", "", ErrNoFrontMatter
	}
	for off := 0; off < len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end >= 0 {
			next = off + end + 1
			end += off
		} else {
			end = len(rest)
		}
		if strings.TrimRight(rest[off:end], " \t") == "---" {
			return rest[:off], rest[next:], nil
		}
		off = next
	}
	return "", "", errors.New("SKILL.md front-matter is not closed by a \"---\" line")
}

// decodeMetadata turns the metadata node, a YAML map or a string holding a
// JSON object, into a map. Absent or empty metadata gives nil.
func decodeMetadata(n *yaml.Node) (map[string]any, error) {
	var m map[string]any
	switch {
	case n.Kind == 0 || n.Tag == "!!null":
		return nil, nil
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		if strings.TrimSpace(n.Value) == "" {
			return nil, nil
		}
		if err := json.Unmarshal([]byte(n.Value), &m); err != nil {
			return nil, fmt.Errorf("metadata is a string but not a JSON object: %w", err)
		}
	case n.Kind == yaml.MappingNode:
		if err := n.Decode(&m); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	default:
		return nil, errors.New("metadata must be a map or a string holding a JSON object")
	}
	return m, nil
}

// interpret finds the emoji and the requirements in the metadata: under
// the first namespace key present, else at its top level.
func interpret(meta map[string]any) (emoji string, req Requirements, err error) {
	ns, at := meta, "metadata"
	for _, k := range namespaces {
		v, ok := meta[k]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return "", req, fmt.Errorf("metadata.%s must be a map", k)
		}
		ns, at = m, "metadata."+k
		break
	}
	for _, m := range []map[string]any{ns, meta} {
		if v, ok := m["emoji"]; ok && emoji == "" {
			s, ok := v.(string)
			if !ok {
				return "", req, fmt.Errorf("%s.emoji must be a string", at)
			}
			emoji = strings.TrimSpace(s)
		}
	}
	var requires map[string]any
	if v, ok := ns["requires"]; ok && v != nil {
		if requires, ok = v.(map[string]any); !ok {
			return "", req, fmt.Errorf("%s.requires must be a map", at)
		}
	}
	fields := []struct {
		m     map[string]any
		key   string
		label string
		dest  *[]string
	}{
		{requires, "bins", at + ".requires.bins", &req.Bins},
		{requires, "anyBins", at + ".requires.anyBins", &req.AnyBins},
		{requires, "any_bins", at + ".requires.any_bins", &req.AnyBins},
		{requires, "env", at + ".requires.env", &req.Env},
		{requires, "os", at + ".requires.os", &req.OS},
		// OpenClaw puts the OS constraint beside requires.
		{ns, "os", at + ".os", &req.OS},
	}
	for _, f := range fields {
		list, err := stringList(f.m[f.key], f.label)
		if err != nil {
			return "", req, err
		}
		*f.dest = append(*f.dest, list...)
	}
	for i, o := range req.OS {
		req.OS[i] = normalizeOS(o)
	}
	return emoji, req, nil
}

// stringList reads a list of strings, or a single string, dropping blank
// entries.
func stringList(v any, where string) ([]string, error) {
	var items []any
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		items = []any{v}
	case []any:
		items = v
	default:
		return nil, fmt.Errorf("%s must be a list of strings", where)
	}
	var out []string
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a list of strings, found %v", where, it)
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// normalizeOS maps the names other ecosystems use to GOOS values.
func normalizeOS(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "win32", "win":
		return "windows"
	case "macos", "osx", "mac":
		return "darwin"
	}
	return s
}
