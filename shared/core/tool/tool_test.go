package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

type fakeTool struct{ name string }

func (f fakeTool) Definition() chat.ToolDef { return chat.ToolDef{Name: f.name} }
func (f fakeTool) Policy() Policy           { return Policy{} }
func (f fakeTool) Call(context.Context, Env, json.RawMessage) (string, error) {
	return f.name, nil
}

func TestRegistry(t *testing.T) {
	r, err := NewRegistry(fakeTool{"write_file"}, fakeTool{"exec"}, fakeTool{"read_file"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range r.Definitions() {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"exec", "read_file", "write_file"}, names); diff != "" {
		t.Errorf("Definitions names (-want +got):\n%s", diff)
	}
	if got, ok := r.Get("exec"); !ok || got.Definition().Name != "exec" {
		t.Errorf("Get(exec) = %v, %v", got, ok)
	}
	if _, ok := r.Get("missing"); ok {
		t.Error("Get(missing) found a tool")
	}
}

func TestRegistryEmpty(t *testing.T) {
	r, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if defs := r.Definitions(); defs == nil || len(defs) != 0 {
		t.Errorf("Definitions() = %#v, want an empty non-nil slice", defs)
	}
}

func TestRegistryDuplicate(t *testing.T) {
	_, err := NewRegistry(fakeTool{"exec"}, fakeTool{"read_file"}, fakeTool{"exec"})
	if err == nil || !strings.Contains(err.Error(), `"exec"`) {
		t.Errorf("NewRegistry with a duplicate name: err = %v, want one naming \"exec\"", err)
	}
}

func TestAutonomyRoundTrip(t *testing.T) {
	for _, a := range []Autonomy{ReadOnly, Supervised, Full} {
		got, err := ParseAutonomy(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAutonomy(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
		b, err := json.Marshal(struct{ A Autonomy }{a})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ A Autonomy }
		if err := json.Unmarshal(b, &back); err != nil || back.A != a {
			t.Errorf("JSON round trip of %v via %s = %v, %v", a, b, back.A, err)
		}
	}
}

func TestAutonomyNames(t *testing.T) {
	got := map[string]string{}
	for _, a := range []Autonomy{ReadOnly, Supervised, Full, Autonomy(7), Autonomy(-1)} {
		b, _ := a.MarshalText()
		got[a.String()] = string(b)
	}
	want := map[string]string{
		"read_only": "read_only", "supervised": "supervised", "full": "full",
		"autonomy(7)": "autonomy(7)", "autonomy(-1)": "autonomy(-1)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if !(ReadOnly < Supervised && Supervised < Full) {
		t.Error("autonomy levels are not ordered from least to most trusted")
	}
}

func TestParseAutonomyUnknown(t *testing.T) {
	for _, s := range []string{"", "admin", "Full", " full", "read-only", "autonomy(1)"} {
		if _, err := ParseAutonomy(s); err == nil {
			t.Errorf("ParseAutonomy(%q) succeeded", s)
		}
		a := Full
		if err := a.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("UnmarshalText(%q) succeeded", s)
		}
		if a != Full {
			t.Errorf("a failed UnmarshalText(%q) changed the value to %v", s, a)
		}
	}
	var v struct{ A Autonomy }
	if err := json.Unmarshal([]byte(`{"A":"root"}`), &v); err == nil {
		t.Error(`json.Unmarshal of "root" succeeded`)
	}
}
