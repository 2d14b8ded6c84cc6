// Package awsmodel holds requests to the fakes of tests/cloudtest to the
// rules AWS holds them to: a service's published model, as botocore ships
// it (the data/<service>/<version>/service-2.json[.gz] of the Python
// package installed on the project's machines, the newest version), and
// the input shape of each operation. Model.Validate checks a request's
// input against it — required members, lengths of strings, blobs, lists
// and maps, patterns, enums, numeric ranges, unions, the types of values,
// and members the model does not know, nested to any depth — and the
// From* functions read a request's input off the wire of each protocol
// (awsJson, rest-json, query), so a fake refuses what
// the service refuses.
//
// The data directory is BOTOCORE_DATA when set; otherwise python3 tells
// where botocore is installed, once per test process.
//
// Like every package under tests/, it is test support.
package awsmodel

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Model is one service's published model.
type Model struct {
	// Service is the service's model name (botocore's folder, such as
	// "scheduler"); Protocol the metadata's protocol (such as
	// "rest-json"); TargetPrefix the awsJson protocols' X-Amz-Target
	// prefix.
	Service, Protocol, TargetPrefix string
	// Skipped lists, by shape, the patterns Go's regexp cannot compile:
	// they are not checked.
	Skipped []string

	operations map[string]operation
	shapes     map[string]*shape
}

type operation struct {
	Name string `json:"name"`
	HTTP struct {
		Method     string `json:"method"`
		RequestURI string `json:"requestUri"`
	} `json:"http"`
	Input *struct {
		Shape string `json:"shape"`
	} `json:"input"`
}

type shape struct {
	Type      string            `json:"type"`
	Required  []string          `json:"required"`
	Members   map[string]member `json:"members"`
	Member    *member           `json:"member"`
	Key       *member           `json:"key"`
	Value     *member           `json:"value"`
	Min       *float64          `json:"min"`
	Max       *float64          `json:"max"`
	Pattern   string            `json:"pattern"`
	Enum      []string          `json:"enum"`
	Payload   string            `json:"payload"`
	Union     bool              `json:"union"`
	Flattened bool              `json:"flattened"`
	Document  bool              `json:"document"`

	re *regexp.Regexp
}

type member struct {
	Shape        string `json:"shape"`
	Location     string `json:"location"`
	LocationName string `json:"locationName"`
	Flattened    bool   `json:"flattened"`
}

// Parse reads a service-2.json model of service.
func Parse(service string, data []byte) (*Model, error) {
	var raw struct {
		Metadata struct {
			Protocol     string `json:"protocol"`
			TargetPrefix string `json:"targetPrefix"`
		} `json:"metadata"`
		Operations map[string]operation `json:"operations"`
		Shapes     map[string]*shape    `json:"shapes"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("model of %s: %w", service, err)
	}
	m := &Model{Service: service, Protocol: raw.Metadata.Protocol, TargetPrefix: raw.Metadata.TargetPrefix,
		operations: raw.Operations, shapes: raw.Shapes}
	names := make([]string, 0, len(m.shapes))
	for name := range m.shapes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := m.shapes[name]
		if s.Pattern == "" {
			continue
		}
		re, err := compilePattern(s.Pattern)
		if err != nil {
			m.Skipped = append(m.Skipped, fmt.Sprintf("%s: pattern %s: %v", name, s.Pattern, err))
			continue
		}
		s.re = re
	}
	return m, nil
}

// compilePattern compiles a model's pattern (ECMAScript or Java syntax)
// as Go's RE2, matching the whole value as the services do (AWS answers
// "Member must satisfy regular expression pattern" for a value that only
// contains a match): a hyphen inside a class that cannot start a range
// (after a range, or last) is escaped, as those syntaxes read it
// literally.
func compilePattern(p string) (*regexp.Regexp, error) {
	if re, err := regexp.Compile(`^(?:` + p + `)$`); err == nil {
		return re, nil
	}
	var b strings.Builder
	inClass, afterRange := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			i++
			b.WriteByte(p[i])
			afterRange = false
			continue
		case !inClass && c == '[':
			inClass, afterRange = true, false
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			continue
		case inClass && c == ']':
			inClass = false
		case inClass && c == '-':
			if afterRange || i+1 < len(p) && p[i+1] == ']' {
				b.WriteString(`\-`)
				afterRange = false
				continue
			}
			if i+1 < len(p) {
				// a range: copy its end and remember it.
				b.WriteByte('-')
				i++
				b.WriteByte(p[i])
				if p[i] == '\\' && i+1 < len(p) {
					i++
					b.WriteByte(p[i])
				}
				afterRange = true
				continue
			}
		}
		afterRange = false
		b.WriteByte(c)
	}
	return regexp.Compile(`^(?:` + b.String() + `)$`)
}

var (
	dataDir = sync.OnceValues(func() (string, error) {
		if d := os.Getenv("BOTOCORE_DATA"); d != "" {
			return d, nil
		}
		out, err := exec.Command("python3", "-c",
			"import importlib.util, os; print(os.path.join(importlib.util.find_spec('botocore').submodule_search_locations[0], 'data'))").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
			}
			return "", fmt.Errorf("finding botocore's data with python3 (install botocore, or set BOTOCORE_DATA): %w", err)
		}
		return strings.TrimSpace(string(out)), nil
	})
	modelsMu sync.Mutex
	models   = map[string]*Model{}
)

// Load returns the model of service (botocore's folder name, such as
// "stepfunctions"), read once per test process; it fails the test when
// the model cannot be found or read.
func Load(t testing.TB, service string) *Model {
	t.Helper()
	m, err := load(service)
	if err != nil {
		t.Fatalf("the AWS model of %s: %v", service, err)
	}
	return m
}

func load(service string) (*Model, error) {
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m, ok := models[service]; ok {
		return m, nil
	}
	dir, err := dataDir()
	if err != nil {
		return nil, err
	}
	versions, err := os.ReadDir(filepath.Join(dir, service))
	if err != nil {
		return nil, fmt.Errorf("botocore's data (BOTOCORE_DATA or python3's botocore): %w", err)
	}
	var newest string
	for _, v := range versions {
		if v.IsDir() && v.Name() > newest {
			newest = v.Name()
		}
	}
	if newest == "" {
		return nil, fmt.Errorf("no version of %s in %s", service, dir)
	}
	data, err := readModel(filepath.Join(dir, service, newest, "service-2.json"))
	if err != nil {
		return nil, err
	}
	m, err := Parse(service, data)
	if err != nil {
		return nil, err
	}
	models[service] = m
	return m, nil
}

// readModel reads path, or path.gz uncompressed.
func readModel(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	f, err := os.Open(path + ".gz")
	if err != nil {
		return nil, fmt.Errorf("neither %s nor its .gz: %w", path, err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s.gz: %w", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return nil, fmt.Errorf("%s.gz: %w", path, err)
	}
	return b, nil
}

// Enum returns the values of the enum shape name; nil when it is not
// one.
func (m *Model) Enum(name string) []string {
	if s := m.shapes[name]; s != nil {
		return slices.Clone(s.Enum)
	}
	return nil
}

// input returns the input shape of op, or nil for an operation with no
// input.
func (m *Model) input(op string) (*shape, string, error) {
	o, ok := m.operations[op]
	if !ok {
		return nil, "", fmt.Errorf("%s has no operation %s", m.Service, op)
	}
	if o.Input == nil {
		return nil, "", nil
	}
	s, ok := m.shapes[o.Input.Shape]
	if !ok {
		return nil, "", fmt.Errorf("%s: no shape %s", op, o.Input.Shape)
	}
	return s, o.Input.Shape, nil
}
