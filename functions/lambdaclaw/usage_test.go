package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestUsageShowsFlags holds the top-level usage to the commands' own
// flags: every flag a command takes is on its line (but --config and
// --region, which every command of the home or of a stack takes).
func TestUsageShowsFlags(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)`)
	for _, entry := range usageEntries() {
		// The command's words come before its first argument or flag:
		// "cron rm|run ID" is cron rm and cron run.
		var words []string
		synopsis, _, _ := strings.Cut(strings.TrimSpace(entry), "  ")
		for _, w := range strings.Fields(synopsis) {
			if strings.ContainsAny(w, "[-(") || strings.ToLower(w) != w {
				break
			}
			words = append(words, w)
		}
		last := words[len(words)-1]
		for _, sub := range strings.Split(last, "|") {
			cmd := append(words[:len(words)-1:len(words)-1], sub)
			var out, errb bytes.Buffer
			if err := run(t.Context(), append(cmd, "--help"), &out, &errb); err != nil {
				t.Errorf("%s --help: %v", strings.Join(cmd, " "), err)
				continue
			}
			for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
				name := m[1]
				if name == "config" || name == "region" {
					continue
				}
				if !regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `\b`).MatchString(entry) {
					t.Errorf("the usage of %s does not show --%s:\n%s", strings.Join(cmd, " "), name, entry)
				}
			}
		}
	}
}

// usageEntries returns the commands of the top-level usage, each with
// the lines that continue it, without the leading "lambdaclaw".
func usageEntries() []string {
	var entries []string
	in := false
	for line := range strings.Lines(usage) {
		switch rest, ok := strings.CutPrefix(line, "  lambdaclaw "); {
		case ok:
			entries, in = append(entries, rest), true
		case in && strings.HasPrefix(line, "    "):
			entries[len(entries)-1] += line
		default:
			in = false
		}
	}
	return entries
}
