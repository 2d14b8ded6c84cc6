package cloudtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The deployment grants each Lambda function access to the table only for
// the actions it needs and, with the condition dynamodb:LeadingKeys, only
// to the partition keys it owns (infra/stack.go). The synthesized grants
// are kept in infra/testdata/table-access.json (infra's
// TestTableAccessFile keeps the file equal to the template), and a
// function's tests send its DynamoDB requests through a proxy that allows
// what those grants allow and answers the rest as DynamoDB does
// (AccessDeniedException), failing the test: a grant too narrow for the
// code fails here rather than in AWS.

// accessFile is the grants file, relative to the repository root.
const accessFile = "infra/testdata/table-access.json"

// Grant is one IAM statement on the table, as table-access.json holds it.
type Grant struct {
	// Actions are IAM actions ("dynamodb:GetItem").
	Actions []string `json:"actions"`
	// Resource is "table" or "index/<name>".
	Resource string `json:"resource"`
	// LeadingKeys are the StringLike patterns of the condition
	// ForAllValues:StringLike dynamodb:LeadingKeys; none means no
	// condition.
	LeadingKeys []string `json:"leading_keys,omitempty"`
}

// request is what IAM authorizes of a DynamoDB request: one action on one
// resource with the partition keys it names. A batch or transaction is
// several.
type request struct {
	action   string
	resource string
	keys     []string
}

func (r request) String() string {
	return fmt.Sprintf("%s on %s with leading keys %q", r.action, r.resource, r.keys)
}

// allows reports whether one of grants allows r, as IAM evaluates the
// statements: the action listed, the resource named, and every leading
// key matching a pattern (ForAllValues: true for a request without keys).
func allows(grants []Grant, r request) bool {
	for _, g := range grants {
		if g.Resource != r.resource || !slices.Contains(g.Actions, r.action) {
			continue
		}
		ok := true
		for _, k := range r.keys {
			if len(g.LeadingKeys) > 0 && !slices.ContainsFunc(g.LeadingKeys, func(p string) bool { return stringLike(p, k) }) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// stringLike matches IAM's StringLike: * any run of characters, ? one.
func stringLike(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, c := range pattern {
		switch c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}

// attrValue is a DynamoDB attribute value in the JSON protocol.
type attrValue struct {
	S *string `json:"S"`
}

type keyed struct {
	Key  map[string]attrValue `json:"Key"`
	Item map[string]attrValue `json:"Item"`
}

// pk returns the partition key the item or key names.
func (k keyed) pk() []string {
	for _, m := range []map[string]attrValue{k.Key, k.Item} {
		if v, ok := m["pk"]; ok && v.S != nil {
			return []string{*v.S}
		}
	}
	return nil
}

// body is the union of the request bodies the store sends.
type body struct {
	keyed
	IndexName                 string                     `json:"IndexName"`
	KeyConditionExpression    string                     `json:"KeyConditionExpression"`
	ExpressionAttributeNames  map[string]string          `json:"ExpressionAttributeNames"`
	ExpressionAttributeValues map[string]attrValue       `json:"ExpressionAttributeValues"`
	RequestItems              map[string]json.RawMessage `json:"RequestItems"`
	TransactItems             []map[string]keyed         `json:"TransactItems"`
}

// keyCondition finds the partition key's value in a Query's key condition.
var keyCondition = regexp.MustCompile(`([#\w]+)\s*=\s*(:\w+)`)

// requests decodes what IAM authorizes of the DynamoDB operation op with
// body b.
func requests(op string, b []byte) ([]request, error) {
	var in body
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("decode %s: %w", op, err)
	}
	one := func(action string, keys []string) []request {
		return []request{{action: "dynamodb:" + action, resource: "table", keys: keys}}
	}
	switch op {
	case "GetItem", "PutItem", "UpdateItem", "DeleteItem":
		return one(op, in.pk()), nil
	case "Query":
		res := "table"
		want := "pk"
		if in.IndexName != "" {
			res, want = "index/"+in.IndexName, in.IndexName+"pk"
		}
		var keys []string
		for _, m := range keyCondition.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
			name := m[1]
			if n, ok := in.ExpressionAttributeNames[name]; ok {
				name = n
			}
			if v, ok := in.ExpressionAttributeValues[m[2]]; ok && v.S != nil && name == want {
				keys = append(keys, *v.S)
			}
		}
		return []request{{action: "dynamodb:Query", resource: res, keys: keys}}, nil
	case "BatchWriteItem", "BatchGetItem":
		var keys []string
		for _, raw := range in.RequestItems {
			if op == "BatchGetItem" {
				var g struct{ Keys []map[string]attrValue }
				if err := json.Unmarshal(raw, &g); err != nil {
					return nil, err
				}
				for _, k := range g.Keys {
					keys = append(keys, keyed{Key: k}.pk()...)
				}
				continue
			}
			var w []struct {
				PutRequest    *keyed
				DeleteRequest *keyed
			}
			if err := json.Unmarshal(raw, &w); err != nil {
				return nil, err
			}
			for _, r := range w {
				for _, k := range []*keyed{r.PutRequest, r.DeleteRequest} {
					if k != nil {
						keys = append(keys, k.pk()...)
					}
				}
			}
		}
		return one(op, keys), nil
	case "TransactWriteItems", "TransactGetItems":
		// Authorized as the operations they hold.
		actions := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		var out []request
		for _, ti := range in.TransactItems {
			for kind, k := range ti {
				out = append(out, one(actions[kind], k.pk())...)
			}
		}
		return out, nil
	}
	// The rest name no keys (Scan, DescribeTable, …).
	return one(op, nil), nil
}

// Observed is one DynamoDB request a function made, for RecordAccess.
type Observed struct {
	Function string `json:"function"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
	// Prefix is the leading key up to and including its first "#" (the
	// key's kind), or the key itself.
	Prefix string `json:"prefix,omitempty"`
}

// recordAccess appends what functions did to the file
// CLOUDTEST_RECORD_ACCESS names, if set: a way to see which actions and
// key prefixes a function's tests use.
func recordAccess(function string, rs []request) {
	file := os.Getenv("CLOUDTEST_RECORD_ACCESS")
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	for _, r := range rs {
		keys := r.keys
		if len(keys) == 0 {
			keys = []string{""}
		}
		for _, k := range keys {
			if i := strings.Index(k, "#"); i >= 0 {
				k = k[:i+1]
			}
			b, _ := json.Marshal(Observed{Function: function, Action: r.action, Resource: r.resource, Prefix: k})
			f.Write(append(b, '\n'))
		}
	}
}

// loadAccess reads the grants of every function from table-access.json.
func loadAccess(t *testing.T) map[string][]Grant {
	t.Helper()
	root := filepath.Dir(filepath.Dir(EventPath(t, "x"))) // <root>/events/x → <root>
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(accessFile)))
	if err != nil {
		t.Fatalf("%v (cd infra && go test -run TableAccessFile -update writes it)", err)
	}
	var all map[string][]Grant
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("%s: %v", accessFile, err)
	}
	return all
}

// Policed returns an endpoint of DynamoDB Local that lets through only
// what the deployment lets function do to the table (table-access.json):
// a request the grants refuse gets DynamoDB's AccessDeniedException, and
// fails the test.
func (tb *Table) Policed(t *testing.T, function string) string {
	t.Helper()
	grants, ok := loadAccess(t)[function]
	if !ok {
		t.Fatalf("%s has no grants for the function %q", accessFile, function)
	}
	return tb.policed(t, function, grants, func(d string) {
		t.Errorf("the %s function's grants (%s) refuse %s", function, accessFile, d)
	})
}

// policed is Policed with the grants given; denied is told of each
// request refused, once, when the test ends.
func (tb *Table) policed(t *testing.T, function string, grants []Grant, denied func(string)) string {
	t.Helper()
	target, err := url.Parse(tb.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var refused []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		rs, err := requests(op, b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		recordAccess(function, rs)
		for _, req := range rs {
			if !allows(grants, req) {
				mu.Lock()
				refused = append(refused, req.String())
				mu.Unlock()
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":%q}`,
					"User: "+function+" is not authorized to perform: "+req.String())
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, d := range slices.Compact(slices.Sorted(slices.Values(refused))) {
			denied(d)
		}
	})
	return srv.URL
}
