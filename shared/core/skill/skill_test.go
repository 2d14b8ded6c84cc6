package skill

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Skill
	}{
		{
			name: "minimal",
			in:   "---\nname: notes\ndescription: Take notes.\n---\n# Notes\n\nWrite things down.\n",
			want: Skill{Name: "notes", Description: "Take notes.", Body: "# Notes\n\nWrite things down."},
		},
		{
			name: "YAML metadata nested under openclaw",
			in: `---
name: taskboard
description: Manage tasks via the Taskboard API.
version: 1.0.0
metadata:
  openclaw:
    emoji: "✅"
    os: [darwin, linux]
    requires:
      env:
        - TASKBOARD_API_KEY
      bins:
        - curl
    primaryEnv: TASKBOARD_API_KEY
---
Use curl.
`,
			want: Skill{
				Name: "taskboard", Description: "Manage tasks via the Taskboard API.", Emoji: "✅",
				Requires: Requirements{Bins: []string{"curl"}, Env: []string{"TASKBOARD_API_KEY"}, OS: []string{"darwin", "linux"}},
				Metadata: map[string]any{"openclaw": map[string]any{
					"emoji": "✅", "os": []any{"darwin", "linux"}, "primaryEnv": "TASKBOARD_API_KEY",
					"requires": map[string]any{"env": []any{"TASKBOARD_API_KEY"}, "bins": []any{"curl"}},
				}},
				Body: "Use curl.",
			},
		},
		{
			name: "JSON string metadata, as OpenClaw writes it",
			in: `---
name: github
description: "Interact with GitHub using the gh CLI: issues, pull requests and runs."
metadata: {"openclaw": {"emoji": "🐙", "requires": {"bins": ["gh"], "anyBins": ["git", "jj"]}, "os": ["win32"]}}
---
# GitHub
`,
			want: Skill{
				Name: "github", Description: "Interact with GitHub using the gh CLI: issues, pull requests and runs.", Emoji: "🐙",
				Requires: Requirements{Bins: []string{"gh"}, AnyBins: []string{"git", "jj"}, OS: []string{"windows"}},
				Metadata: map[string]any{"openclaw": map[string]any{
					"emoji": "🐙", "os": []any{"win32"},
					"requires": map[string]any{"bins": []any{"gh"}, "anyBins": []any{"git", "jj"}},
				}},
				Body: "# GitHub",
			},
		},
		{
			name: "JSON object in a quoted YAML string",
			in:   "---\nname: weather\ndescription: Forecasts.\nmetadata: '{\"beamclaw\": {\"requires\": {\"bins\": [\"curl\"]}}}'\n---\nbody",
			want: Skill{
				Name: "weather", Description: "Forecasts.", Requires: Requirements{Bins: []string{"curl"}},
				Metadata: map[string]any{"beamclaw": map[string]any{"requires": map[string]any{"bins": []any{"curl"}}}},
				Body:     "body",
			},
		},
		{
			name: "lambdaclaw key wins over openclaw",
			in: `---
name: both
description: Two ecosystems.
metadata:
  openclaw: {emoji: "🦞", requires: {bins: [brew]}}
  lambdaclaw: {emoji: "λ", requires: {env: [HOME], os: macos}}
---
`,
			want: Skill{
				Name: "both", Description: "Two ecosystems.", Emoji: "λ",
				Requires: Requirements{Env: []string{"HOME"}, OS: []string{"darwin"}},
				Metadata: map[string]any{
					"openclaw":   map[string]any{"emoji": "🦞", "requires": map[string]any{"bins": []any{"brew"}}},
					"lambdaclaw": map[string]any{"emoji": "λ", "requires": map[string]any{"env": []any{"HOME"}, "os": "macos"}},
				},
			},
		},
		{
			name: "requirements at the top of metadata",
			in:   "---\nname: plain\ndescription: d\nmetadata:\n  emoji: 📦\n  requires: {bins: [tar, \" \"], any_bins: [zstd], env: [] }\n---\n\n\nbody\n\n",
			want: Skill{
				Name: "plain", Description: "d", Emoji: "📦",
				Requires: Requirements{Bins: []string{"tar"}, AnyBins: []string{"zstd"}},
				Metadata: map[string]any{"emoji": "📦", "requires": map[string]any{"bins": []any{"tar", " "}, "any_bins": []any{"zstd"}, "env": []any{}}},
				Body:     "body",
			},
		},
		{
			name: "multi-line flow metadata, CRLF and a byte order mark",
			in:   "\uFEFF---\r\nname: flow\r\ndescription: >\r\n  Folded\r\n  description.\r\nmetadata:\r\n  {\r\n    \"openclaw\":\r\n      { \"emoji\": \"🌊\" },\r\n  }\r\n---  \r\nBody\r\n",
			want: Skill{
				Name: "flow", Description: "Folded description.", Emoji: "🌊",
				Metadata: map[string]any{"openclaw": map[string]any{"emoji": "🌊"}},
				Body:     "Body",
			},
		},
		{
			name: "empty metadata, no body",
			in:   "---\nname: a_1\ndescription: x\nmetadata:\n---",
			want: Skill{Name: "a_1", Description: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "does not start with YAML front-matter"},
		{"no front-matter", "# Skill\nname: x\n", "does not start with YAML front-matter"},
		{"not closed", "---\nname: x\ndescription: y\n", `not closed by a "---" line`},
		{"invalid YAML", "---\nname: [x\ndescription: y\n---\n", "front-matter is not valid YAML"},
		{"not a map", "---\n- name\n---\n", "front-matter is not valid YAML"},
		{"missing name", "---\ndescription: y\n---\n", "front-matter has no name"},
		{"missing description", "---\nname: x\n---\n", `skill "x": front-matter has no description`},
		{"blank description", "---\nname: x\ndescription: '  '\n---\n", "has no description"},
		{"upper case name", "---\nname: My-Skill\ndescription: y\n---\n", `invalid skill name "My-Skill"`},
		{"path name", "---\nname: ../x\ndescription: y\n---\n", `invalid skill name "../x"`},
		{"leading dash", "---\nname: -x\ndescription: y\n---\n", `invalid skill name "-x"`},
		{"too long", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: y\n---\n", "invalid skill name"},
		{"bad JSON metadata", "---\nname: x\ndescription: y\nmetadata: '{\"openclaw\": '\n---\n", `skill "x": metadata is a string but not a JSON object`},
		{"JSON array metadata", "---\nname: x\ndescription: y\nmetadata: '[1]'\n---\n", "metadata is a string but not a JSON object"},
		{"list metadata", "---\nname: x\ndescription: y\nmetadata: [a]\n---\n", "metadata must be a map or a string"},
		{"namespace not a map", "---\nname: x\ndescription: y\nmetadata: {openclaw: yes}\n---\n", "metadata.openclaw must be a map"},
		{"requires not a map", "---\nname: x\ndescription: y\nmetadata: {requires: [gh]}\n---\n", "metadata.requires must be a map"},
		{"bins not strings", "---\nname: x\ndescription: y\nmetadata: {beamclaw: {requires: {bins: [1]}}}\n---\n", "metadata.beamclaw.requires.bins must be a list of strings"},
		{"os not strings", "---\nname: x\ndescription: y\nmetadata: {openclaw: {os: {a: b}}}\n---\n", "metadata.openclaw.os must be a list of strings"},
		{"emoji not a string", "---\nname: x\ndescription: y\nmetadata: {emoji: [1]}\n---\n", "metadata.emoji must be a string"},
		{"invalid UTF-8", "---\nname: x\ndescription: \xff\n---\n", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want an error containing %q", s, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := Parse([]byte("no front-matter")); !errors.Is(err, ErrNoFrontMatter) {
		t.Errorf("Parse without front-matter: %v, want ErrNoFrontMatter", err)
	}
}

func TestSourceString(t *testing.T) {
	got := []string{Bundled.String(), Global.String(), Agent.String(), Source(7).String()}
	want := []string{"bundled", "global", "agent", "source(7)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
