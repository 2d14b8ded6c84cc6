package skill

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// maxListedDescription is the most of a description the system prompt
// shows, in runes.
const maxListedDescription = 1024

// Section returns the system message that lists skills, sorted by name,
// with their emoji and description, and tells the model to load a skill
// with the load_skill tool before using it. It reports false when there
// are no skills. Callers pass the eligible skills only (see Filter).
func Section(skills []Skill) (chat.Message, bool) {
	if len(skills) == 0 {
		return chat.Message{}, false
	}
	sorted := append([]Skill(nil), skills...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	b.WriteString("## Skills\n\n" +
		"Skills are instructions for particular tasks. When a task matches a skill's description, " +
		"call the " + ToolName + " tool with the skill's name to read its instructions, then follow them. " +
		"Load a skill before you use it instead of guessing what it says, and only when the task needs it.\n")
	for _, s := range sorted {
		b.WriteString("\n- ")
		if s.Emoji != "" {
			b.WriteString(s.Emoji + " ")
		}
		fmt.Fprintf(&b, "%s: %s", s.Name, oneLine(s.Description, maxListedDescription))
	}
	return chat.Message{Role: chat.System, Content: b.String()}, true
}

// oneLine collapses whitespace and cuts text to at most n runes.
func oneLine(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}
