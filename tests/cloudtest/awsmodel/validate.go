package awsmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Violation is one rule of the model a request breaks.
type Violation struct {
	// Operation is the operation's name; Path the member's path from
	// the input (members by their model names, list items [i], map
	// values [key]); Rule the rule broken.
	Operation, Path, Rule string
}

func (v *Violation) Error() string {
	if v.Path == "" {
		return v.Operation + ": " + v.Rule
	}
	return v.Operation + ": " + v.Path + ": " + v.Rule
}

// Validate checks in, the input of op as a decoded tree (objects as
// map[string]any keyed by member names or their serialized names, lists
// as []any, strings, numbers as json.Number or Go numbers, bools, blobs
// as []byte or base64 strings, timestamps as time.Time, numbers or
// strings), against op's input shape. It returns every violation, joined
// (each a *Violation), or nil.
func (m *Model) Validate(op string, in map[string]any) error {
	s, name, err := m.input(op)
	if err != nil {
		return err
	}
	if s == nil {
		if len(in) > 0 {
			return &Violation{Operation: op, Rule: "the operation takes no input"}
		}
		return nil
	}
	v := validator{m: m, op: op}
	v.value("", name, s, in)
	return errors.Join(v.errs...)
}

type validator struct {
	m    *Model
	op   string
	errs []error
}

func (v *validator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, &Violation{Operation: v.op, Path: path, Rule: fmt.Sprintf(format, args...)})
}

// value checks x, at path, against the shape name (s).
func (v *validator) value(path, name string, s *shape, x any) {
	if s.Document {
		return
	}
	switch s.Type {
	case "structure":
		obj, ok := x.(map[string]any)
		if !ok {
			v.fail(path, "want an object (%s), got %s", name, kind(x))
			return
		}
		v.structure(path, s, obj)
	case "list":
		items, ok := x.([]any)
		if !ok {
			v.fail(path, "want a list (%s), got %s", name, kind(x))
			return
		}
		v.length(path, "length", len(items), s)
		for i, item := range items {
			v.member(fmt.Sprintf("%s[%d]", path, i), *s.Member, item)
		}
	case "map":
		obj, ok := x.(map[string]any)
		if !ok {
			v.fail(path, "want a map (%s), got %s", name, kind(x))
			return
		}
		v.length(path, "length", len(obj), s)
		for _, k := range sortedKeys(obj) {
			v.member(fmt.Sprintf("%s[%q]", path, k), *s.Key, k)
			v.member(fmt.Sprintf("%s[%q]", path, k), *s.Value, obj[k])
		}
	case "string":
		str, ok := x.(string)
		if !ok {
			v.fail(path, "want a string (%s), got %s", name, kind(x))
			return
		}
		v.length(path, "length", utf8.RuneCountInString(str), s)
		if s.re != nil && !s.re.MatchString(str) {
			v.fail(path, "%q does not match pattern %s", clip(str), s.Pattern)
		}
		if s.Enum != nil && !slices.Contains(s.Enum, str) {
			v.fail(path, "%q is not one of %q", clip(str), s.Enum)
		}
	case "blob":
		switch b := x.(type) {
		case []byte:
			v.length(path, "length", len(b), s)
		case string: // base64 in JSON bodies
		default:
			v.fail(path, "want a blob (%s), got %s", name, kind(x))
		}
	case "boolean":
		if _, ok := x.(bool); !ok {
			v.fail(path, "want a boolean (%s), got %s", name, kind(x))
		}
	case "timestamp":
		switch x.(type) {
		case time.Time, string, json.Number, float64, int64, int:
		default:
			v.fail(path, "want a timestamp (%s), got %s", name, kind(x))
		}
	case "integer", "long", "short", "byte", "float", "double":
		n, ok := number(x)
		if !ok {
			v.fail(path, "want a number (%s), got %s", name, kind(x))
			return
		}
		if s.Type != "float" && s.Type != "double" && n != math.Trunc(n) {
			v.fail(path, "%v is not an integer", n)
		}
		if s.Min != nil && n < *s.Min {
			v.fail(path, "value %v < min %v", n, *s.Min)
		}
		if s.Max != nil && n > *s.Max {
			v.fail(path, "value %v > max %v", n, *s.Max)
		}
	default:
		v.fail(path, "the validator does not know the type %s of %s", s.Type, name)
	}
}

func (v *validator) length(path, what string, n int, s *shape) {
	if s.Min != nil && float64(n) < *s.Min {
		v.fail(path, "%s %d < min %v", what, n, *s.Min)
	}
	if s.Max != nil && float64(n) > *s.Max {
		v.fail(path, "%s %d > max %v", what, n, *s.Max)
	}
}

func (v *validator) member(path string, mb member, x any) {
	s, ok := v.m.shapes[mb.Shape]
	if !ok {
		v.fail(path, "the model has no shape %s", mb.Shape)
		return
	}
	v.value(path, mb.Shape, s, x)
}

// structure checks the members of obj: required ones present (null is
// absent), each known (by its name, or its serialized name) and valid;
// a union has exactly one.
func (v *validator) structure(path string, s *shape, obj map[string]any) {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	set := map[string]bool{}
	for _, k := range sortedKeys(obj) {
		name, ok := k, false
		if _, ok = s.Members[k]; !ok {
			for mn, mb := range s.Members {
				if mb.LocationName == k && mb.Location == "" {
					name, ok = mn, true
					break
				}
			}
		}
		if !ok {
			v.fail(join(k), "unknown member")
			continue
		}
		if obj[k] == nil {
			continue
		}
		set[name] = true
		v.member(join(name), s.Members[name], obj[k])
	}
	for _, r := range s.Required {
		if !set[r] {
			v.fail(join(r), "required")
		}
	}
	if s.Union && len(set) != 1 {
		v.fail(path, "a union takes exactly one member, not %d", len(set))
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// number reads x as a number.
func number(x any) (float64, bool) {
	switch n := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

func kind(x any) string {
	switch x.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []byte:
		return "bytes"
	case time.Time:
		return "a timestamp"
	}
	if _, ok := number(x); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", x)
}

// clip shortens a long value in a message.
func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return s
}
