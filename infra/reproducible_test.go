package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestSynthReproducible synthesizes the stack with every option on twice
// and requires the same cloud assembly byte for byte: the template as
// CloudFormation receives it and the assets' manifest (their hashes). A
// Go map ranged into the template (mount points, endpoints, environment
// variables, grants) would change logical ids or list orders between two
// synths of one checkout, and every deploy would replace or update what
// did not change.
func TestSynthReproducible(t *testing.T) {
	first := stack(t, variantAll)
	second := synth(variantContext[variantAll])
	if second.err != nil {
		t.Fatalf("synthesizing the %s stack again: %v", variantAll, second.err)
	}
	for _, name := range []string{StackName + ".template.json", StackName + ".assets.json"} {
		a, err := os.ReadFile(filepath.Join(first.outdir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(second.outdir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two synths of one checkout (-first +second):\n%s", name, gocmp.Diff(string(a), string(b)))
		}
	}
}
