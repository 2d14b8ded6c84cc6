package awsmodel

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testModel is a model of the shapes the rules apply to.
const testModel = `{
 "metadata": {"protocol": "json", "targetPrefix": "Test"},
 "operations": {
  "Put": {"name": "Put", "http": {"method": "POST", "requestUri": "/things/{Name}"}, "input": {"shape": "PutInput"}},
  "Get": {"name": "Get", "http": {"method": "GET", "requestUri": "/things/{Name}"}, "input": {"shape": "GetInput"}},
  "Ping": {"name": "Ping", "http": {"method": "GET", "requestUri": "/ping"}}
 },
 "shapes": {
  "PutInput": {"type": "structure", "required": ["Name", "Mode"], "members": {
   "Name": {"shape": "Name", "location": "uri", "locationName": "Name"},
   "Mode": {"shape": "Mode"},
   "Zone": {"shape": "Zone", "locationName": "zone"},
   "Count": {"shape": "Count"},
   "Ratio": {"shape": "Ratio"},
   "Tags": {"shape": "Tags"},
   "Env": {"shape": "Env"},
   "Target": {"shape": "Target"},
   "Choice": {"shape": "Choice"},
   "On": {"shape": "Bool"},
   "Data": {"shape": "Data"},
   "Doc": {"shape": "Doc"}
  }},
  "GetInput": {"type": "structure", "required": ["Name"], "members": {
   "Name": {"shape": "Name", "location": "uri", "locationName": "Name"},
   "Group": {"shape": "Name", "location": "querystring", "locationName": "groupName"},
   "Limit": {"shape": "Count", "location": "querystring", "locationName": "limit"},
   "Kind": {"shape": "Mode", "location": "header", "locationName": "X-Kind"}
  }},
  "Name": {"type": "string", "min": 1, "max": 8, "pattern": "^[0-9a-zA-Z-_.]+$"},
  "Mode": {"type": "string", "enum": ["OFF", "ON"]},
  "Zone": {"type": "string", "min": 1, "max": 50},
  "Count": {"type": "integer", "min": 1, "max": 10},
  "Ratio": {"type": "double", "min": 0.5},
  "Tags": {"type": "list", "member": {"shape": "Tag"}, "min": 1, "max": 2},
  "Tag": {"type": "structure", "required": ["Key"], "members": {"Key": {"shape": "Name"}, "Value": {"shape": "Zone"}}},
  "Env": {"type": "map", "key": {"shape": "Name"}, "value": {"shape": "Zone"}, "max": 1},
  "Target": {"type": "structure", "required": ["Arn"], "members": {"Arn": {"shape": "Zone"}, "Input": {"shape": "Zone"}}},
  "Choice": {"type": "structure", "union": true, "members": {"A": {"shape": "Zone"}, "B": {"shape": "Zone"}}},
  "Bool": {"type": "boolean"},
  "Data": {"type": "blob", "max": 3},
  "Doc": {"type": "structure", "members": {}, "document": true},
  "Lookahead": {"type": "string", "pattern": "^(?!aws)[a-z]+$"}
 }
}`

func parseTest(t *testing.T) *Model {
	t.Helper()
	m, err := Parse("test", []byte(testModel))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// violations lists err's violations as their messages.
func violations(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func TestValidate(t *testing.T) {
	m := parseTest(t)
	valid := func(edit func(map[string]any)) map[string]any {
		in := map[string]any{"Name": "job-1", "Mode": "ON"}
		if edit != nil {
			edit(in)
		}
		return in
	}
	for _, tc := range []struct {
		name string
		op   string
		in   map[string]any
		want []string
	}{
		{"valid", "Put", valid(nil), nil},
		{"every member valid", "Put", valid(func(in map[string]any) {
			in["zone"], in["Count"], in["Ratio"] = "UTC", 10, 0.5
			in["Tags"] = []any{map[string]any{"Key": "a", "Value": "b"}}
			in["Env"] = map[string]any{"K": "v"}
			in["Target"] = map[string]any{"Arn": "arn"}
			in["Choice"] = map[string]any{"B": "x"}
			in["On"], in["Data"], in["Doc"] = true, []byte("abc"), map[string]any{"any": []any{1}}
		}), nil},
		{"required missing", "Put", map[string]any{"Name": "n"}, []string{"Put: Mode: required"}},
		{"null is absent", "Put", valid(func(in map[string]any) { in["Mode"] = nil }), []string{"Put: Mode: required"}},
		{"string under min", "Put", valid(func(in map[string]any) { in["Zone"] = "" }),
			[]string{"Put: Zone: length 0 < min 1"}},
		{"serialized name", "Put", valid(func(in map[string]any) { in["zone"] = "" }),
			[]string{"Put: Zone: length 0 < min 1"}},
		{"string over max in characters", "Put", valid(func(in map[string]any) { in["Name"] = "ééééééééé" }),
			[]string{"Put: Name: length 9 > max 8", `Put: Name: "ééééééééé" does not match pattern ^[0-9a-zA-Z-_.]+$`}},
		{"pattern", "Put", valid(func(in map[string]any) { in["Name"] = "a/b" }),
			[]string{`Put: Name: "a/b" does not match pattern ^[0-9a-zA-Z-_.]+$`}},
		{"enum", "Put", valid(func(in map[string]any) { in["Mode"] = "on" }),
			[]string{`Put: Mode: "on" is not one of ["OFF" "ON"]`}},
		{"integer range", "Put", valid(func(in map[string]any) { in["Count"] = 0 }),
			[]string{"Put: Count: value 0 < min 1"}},
		{"integer over max", "Put", valid(func(in map[string]any) { in["Count"] = 11 }),
			[]string{"Put: Count: value 11 > max 10"}},
		{"integer not whole", "Put", valid(func(in map[string]any) { in["Count"] = 1.5 }),
			[]string{"Put: Count: 1.5 is not an integer"}},
		{"double under min", "Put", valid(func(in map[string]any) { in["Ratio"] = 0.25 }),
			[]string{"Put: Ratio: value 0.25 < min 0.5"}},
		{"list too short", "Put", valid(func(in map[string]any) { in["Tags"] = []any{} }),
			[]string{"Put: Tags: length 0 < min 1"}},
		{"list too long", "Put", valid(func(in map[string]any) {
			in["Tags"] = []any{map[string]any{"Key": "a"}, map[string]any{"Key": "b"}, map[string]any{"Key": "c"}}
		}), []string{"Put: Tags: length 3 > max 2"}},
		{"nested in a list", "Put", valid(func(in map[string]any) {
			in["Tags"] = []any{map[string]any{"Key": "a"}, map[string]any{"Value": ""}}
		}), []string{"Put: Tags[1].Value: length 0 < min 1", "Put: Tags[1].Key: required"}},
		{"map keys and values", "Put", valid(func(in map[string]any) { in["Env"] = map[string]any{"a b": ""} }),
			[]string{`Put: Env["a b"]: "a b" does not match pattern ^[0-9a-zA-Z-_.]+$`, `Put: Env["a b"]: length 0 < min 1`}},
		{"map too long", "Put", valid(func(in map[string]any) { in["Env"] = map[string]any{"a": "1", "b": "2"} }),
			[]string{"Put: Env: length 2 > max 1"}},
		{"nested structure", "Put", valid(func(in map[string]any) { in["Target"] = map[string]any{"Input": "x"} }),
			[]string{"Put: Target.Arn: required"}},
		{"unknown member", "Put", valid(func(in map[string]any) { in["Colour"] = "red" }),
			[]string{"Put: Colour: unknown member"}},
		{"unknown nested member", "Put", valid(func(in map[string]any) { in["Target"] = map[string]any{"Arn": "a", "arn": "b"} }),
			[]string{"Put: Target.arn: unknown member"}},
		{"union of two", "Put", valid(func(in map[string]any) { in["Choice"] = map[string]any{"A": "x", "B": "y"} }),
			[]string{"Put: Choice: a union takes exactly one member, not 2"}},
		{"types", "Put", valid(func(in map[string]any) {
			in["Mode"], in["Count"], in["On"], in["Tags"], in["Target"] = 1, "1", "true", "a", []any{}
		}), []string{
			"Put: Count: want a number (Count), got a string", "Put: Mode: want a string (Mode), got a number",
			"Put: On: want a boolean (Bool), got a string", "Put: Tags: want a list (Tags), got a string",
			"Put: Target: want an object (Target), got a list",
		}},
		{"blob too long", "Put", valid(func(in map[string]any) { in["Data"] = []byte("abcd") }),
			[]string{"Put: Data: length 4 > max 3"}},
		{"no input", "Ping", map[string]any{"x": 1}, []string{"Ping: the operation takes no input"}},
		{"unknown operation", "Drop", map[string]any{}, []string{"test has no operation Drop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, violations(m.Validate(tc.op, tc.in))); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestViolationIsTyped(t *testing.T) {
	err := parseTest(t).Validate("Put", map[string]any{"Name": "n", "Mode": "ON", "Count": 0})
	var v *Violation
	if !errors.As(err, &v) || v.Operation != "Put" || v.Path != "Count" || v.Rule != "value 0 < min 1" {
		t.Fatalf("Validate = %v, want one *Violation of Count", err)
	}
}

func TestPatterns(t *testing.T) {
	m := parseTest(t)
	if diff := cmp.Diff([]string{"Lookahead: pattern ^(?!aws)[a-z]+$: error parsing regexp: invalid or unsupported Perl syntax: `(?!`"}, m.Skipped); diff != "" {
		t.Errorf("skipped patterns (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		pattern string
		match   []string
		refuse  []string
	}{
		{`^[0-9a-zA-Z-_.]+$`, []string{"a-b_c.d"}, []string{"a/b", ""}},
		{`^[a-z-]+$`, []string{"a-"}, []string{"A"}},
		{`^[\w-_]+$`, []string{"a-_"}, []string{"a b"}},
		{`^[^a-c-]+$`, []string{"d"}, []string{"-", "a"}},
		{`arn:aws:[a-z]+`, []string{"arn:aws:lambda"}, []string{"x arn:aws:lambda", "arn:aws:"}},
		{`a|b`, []string{"a", "b"}, []string{"ab"}},
	} {
		re, err := compilePattern(tc.pattern)
		if err != nil {
			t.Errorf("compilePattern(%s): %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("%s (as %s) does not match %q", tc.pattern, re, s)
			}
		}
		for _, s := range tc.refuse {
			if re.MatchString(s) {
				t.Errorf("%s (as %s) matches %q", tc.pattern, re, s)
			}
		}
	}
}

func TestFromREST(t *testing.T) {
	m := parseTest(t)
	for _, tc := range []struct {
		name, method, target, body string
		header                     map[string]string
		wantOp                     string
		want                       map[string]any
	}{
		{"uri and body", "POST", "/prod/things/job-1", `{"Mode":"ON","Count":2}`, nil,
			"Put", map[string]any{"Name": "job-1", "Mode": "ON", "Count": jsonNumber("2")}},
		{"escaped label", "POST", "/prod/things/a%2Fb", ``, nil, "Put", map[string]any{"Name": "a/b"}},
		{"query and header", "GET", "/prod/things/x?groupName=g&limit=3&other=1", ``, map[string]string{"X-Kind": "OFF"},
			"Get", map[string]any{"Name": "x", "Group": "g", "Limit": jsonNumber("3"), "Kind": "OFF", "?other": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			op, in, err := m.FromREST(r, "/prod", []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if op != tc.wantOp {
				t.Errorf("operation %s, want %s", op, tc.wantOp)
			}
			if diff := cmp.Diff(tc.want, in); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := m.FromREST(httptest.NewRequest(http.MethodDelete, "/prod/things/x", nil), "/prod", nil); err == nil {
		t.Error("FromREST found an operation for DELETE /things/x")
	}
}

func TestFromQuery(t *testing.T) {
	m := parseTest(t)
	form := url.Values{"Action": {"Put"}, "Version": {"1"}, "Name": {"n"}, "Mode": {"ON"}, "zone": {""},
		"Tags.member.1.Key": {"a"}, "Tags.member.2.Key": {"b"}, "Tags.member.2.Value": {"v"},
		"Env.entry.1.key": {"K"}, "Env.entry.1.value": {"V"}, "Target.Arn": {"arn"}, "Count": {"4"}, "Stray": {"x"}}
	op, in, err := m.FromQuery(form)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"Name": "n", "Mode": "ON", "Zone": "", "Count": jsonNumber("4"), "Stray": "x",
		"Tags":   []any{map[string]any{"Key": "a"}, map[string]any{"Key": "b", "Value": "v"}},
		"Env":    map[string]any{"K": "V"},
		"Target": map[string]any{"Arn": "arn"}}
	if diff := cmp.Diff(want, in); op != "Put" || diff != "" {
		t.Errorf("FromQuery = %s, (-want +got):\n%s", op, diff)
	}
	if diff := cmp.Diff([]string{"Put: Stray: unknown member", "Put: Zone: length 0 < min 1"}, violations(m.Validate(op, in))); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestScheduler checks the published model of EventBridge Scheduler
// itself: it refuses the empty time zone the Scheduler adapter once sent.
func TestScheduler(t *testing.T) {
	m := Load(t, "scheduler")
	body := `{"FlexibleTimeWindow":{"Mode":"OFF"},"GroupName":"lambdaclaw-check-ins","ScheduleExpression":"rate(5 minutes)",` +
		`"ScheduleExpressionTimezone":"","Target":{"Arn":"arn:aws:lambda:us-east-1:123456789012:function:f","RoleArn":"arn:aws:iam::123456789012:role/r","Input":"{}"}}`
	r := httptest.NewRequest(http.MethodPost, "/schedules/job-1", strings.NewReader(body))
	op, in, err := m.FromREST(r, "", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CreateSchedule: ScheduleExpressionTimezone: length 0 < min 1"}
	if diff := cmp.Diff(want, violations(m.Validate(op, in))); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

func jsonNumber(s string) any { return json.Number(s) }

// TestS3 reads requests of S3's rest-xml protocol: the operation by its
// literal query, an XML payload with a flattened list.
func TestS3(t *testing.T) {
	m := Load(t, "s3")
	for _, tc := range []struct {
		name, method, target, body string
		wantOp                     string
		want                       map[string]any
		violations                 []string
	}{
		{"ListObjectsV2 by list-type", "GET", "/b/?list-type=2&prefix=agents%2F&max-keys=0", "", "ListObjectsV2",
			map[string]any{"Bucket": "b", "Prefix": "agents/", "MaxKeys": jsonNumber("0")}, nil},
		{"GetObject by x-id", "GET", "/b/agents/a%20b.md?x-id=GetObject", "", "GetObject",
			map[string]any{"Bucket": "b", "Key": "agents/a b.md"}, nil},
		{"DeleteObjects", "POST", "/b?delete",
			`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>x</Key></Object><Object><Key></Key></Object><Quiet>true</Quiet></Delete>`,
			"DeleteObjects", map[string]any{"Bucket": "b", "Delete": map[string]any{
				"Objects": []any{map[string]any{"Key": "x"}, map[string]any{"Key": ""}}, "Quiet": true}},
			[]string{"DeleteObjects: Delete.Objects[1].Key: length 0 < min 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			op, in, err := m.FromREST(r, "", []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if op != tc.wantOp {
				t.Errorf("operation %s, want %s", op, tc.wantOp)
			}
			if diff := cmp.Diff(tc.want, in); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.violations, violations(m.Validate(op, in))); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
