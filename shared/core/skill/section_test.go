package skill

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

func TestSection(t *testing.T) {
	intro := "## Skills\n\n" +
		"Skills are instructions for particular tasks. When a task matches a skill's description, " +
		"call the load_skill tool with the skill's name to read its instructions, then follow them. " +
		"Load a skill before you use it instead of guessing what it says, and only when the task needs it.\n"
	tests := []struct {
		name   string
		skills []Skill
		want   string
	}{
		{
			name: "sorted, with emoji when there is one",
			skills: []Skill{
				{Name: "weather", Description: "Forecasts for a city.", Emoji: "🌦️"},
				{Name: "github", Description: "Issues and\n  pull requests\tthrough gh.", Body: "not shown"},
				{Name: "calendar", Description: "Read the calendar.", Emoji: "📅"},
			},
			want: intro + "\n- 📅 calendar: Read the calendar.\n- github: Issues and pull requests through gh.\n- 🌦️ weather: Forecasts for a city.",
		},
		{
			name:   "long description is cut",
			skills: []Skill{{Name: "long", Description: strings.Repeat("é", 2000)}},
			want:   intro + "\n- long: " + strings.Repeat("é", 1023) + "…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]Skill(nil), tt.skills...)
			got, ok := Section(tt.skills)
			if !ok {
				t.Fatal("Section reported no section")
			}
			if diff := cmp.Diff(chat.Message{Role: chat.System, Content: tt.want}, got); diff != "" {
				t.Errorf("Section (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.skills); diff != "" {
				t.Errorf("Section changed its argument (-before +after):\n%s", diff)
			}
		})
	}
	if m, ok := Section(nil); ok {
		t.Errorf("Section(nil) = %+v, true; want false", m)
	}
}
