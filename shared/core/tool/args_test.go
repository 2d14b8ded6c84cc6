package tool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type testArgs struct {
	Path      string   `json:"path"`
	Limit     int      `json:"limit"`
	Recursive bool     `json:"recursive"`
	Ratio     float64  `json:"ratio"`
	Tags      []string `json:"tags"`
	Count     *int     `json:"count"`
	Opts      struct {
		Force bool `json:"force"`
	} `json:"opts"`
	Env map[string]string `json:"env"`
}

func TestDecodeArgs(t *testing.T) {
	three := 3
	tests := []struct {
		name    string
		args    string
		want    testArgs
		wantErr string // a prefix of the error message; empty for success
	}{
		{name: "all fields", args: `{"path":"a.txt","limit":5,"recursive":true,"ratio":0.5,"tags":["x"],"count":3}`,
			want: testArgs{Path: "a.txt", Limit: 5, Recursive: true, Ratio: 0.5, Tags: []string{"x"}, Count: &three}},
		{name: "some fields", args: `{"path":"a.txt"}`, want: testArgs{Path: "a.txt"}},
		{name: "empty", args: ``, want: testArgs{}},
		{name: "blank", args: " \n\t", want: testArgs{}},
		{name: "empty object", args: `{}`, want: testArgs{}},
		{name: "trailing whitespace", args: "{\"limit\":2}\n ", want: testArgs{Limit: 2}},
		{name: "unknown field", args: `{"path":"a","file":"b"}`,
			wantErr: `invalid arguments: unknown argument "file" (allowed: path, limit)`},
		{name: "wrong type string", args: `{"path":5}`,
			wantErr: `invalid arguments: "path" must be a string, got number`},
		{name: "wrong type int", args: `{"limit":"ten"}`,
			wantErr: `invalid arguments: "limit" must be an integer, got string`},
		{name: "fraction for int", args: `{"limit":1.5}`,
			wantErr: `invalid arguments: "limit" must be an integer, got number`},
		{name: "wrong type bool", args: `{"recursive":"yes"}`,
			wantErr: `invalid arguments: "recursive" must be true or false, got string`},
		{name: "wrong type float", args: `{"ratio":"half"}`,
			wantErr: `invalid arguments: "ratio" must be a number, got string`},
		{name: "wrong type pointer", args: `{"count":"3"}`,
			wantErr: `invalid arguments: "count" must be an integer, got string`},
		{name: "wrong type slice", args: `{"tags":"x"}`,
			wantErr: `invalid arguments: "tags" must be an array, got string`},
		{name: "wrong type object", args: `{"opts":[1]}`,
			wantErr: `invalid arguments: "opts" must be an object, got array`},
		{name: "wrong type map", args: `{"env":"A=1"}`,
			wantErr: `invalid arguments: "env" must be an object, got string`},
		{name: "trailing object", args: `{"path":"a"} {"path":"b"}`,
			wantErr: "invalid arguments: expected a single JSON object, found more data after it"},
		{name: "trailing garbage", args: `{"path":"a"}x`,
			wantErr: "invalid arguments: expected a single JSON object, found more data after it"},
		{name: "array", args: `["a"]`, wantErr: "invalid arguments: expected a JSON object, got array"},
		{name: "string", args: `"a.txt"`, wantErr: "invalid arguments: expected a JSON object, got string"},
		{name: "number", args: `42`, wantErr: "invalid arguments: expected a JSON object, got number"},
		{name: "incomplete", args: `{"path":"a"`, wantErr: "invalid arguments: the JSON object is incomplete"},
		{name: "not JSON", args: `{path: a}`, wantErr: "invalid arguments: not valid JSON ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got testArgs
			err := DecodeArgs(json.RawMessage(tt.args), &got, "path", "limit")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeArgs(%s) error = %v, want prefix %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeArgs(%s): %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeArgs(%s) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}
