package awsmodel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// FromJSON reads a JSON body (awsJson, rest-json) as an input tree; an
// empty body is no members.
func FromJSON(body []byte) (map[string]any, error) {
	in := map[string]any{}
	if len(bytes.TrimSpace(body)) == 0 {
		return in, nil
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&in); err != nil {
		return nil, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	return in, nil
}

// FromAWSJSON reads a request of the awsJson protocols (1.0, 1.1): the
// operation its X-Amz-Target header names (<TargetPrefix>.<Operation>)
// and its JSON body.
func (m *Model) FromAWSJSON(target string, body []byte) (string, map[string]any, error) {
	op, ok := strings.CutPrefix(target, m.TargetPrefix+".")
	if _, known := m.operations[op]; !ok || !known {
		return "", nil, fmt.Errorf("%s has no operation X-Amz-Target %q", m.Service, target)
	}
	in, err := FromJSON(body)
	return op, in, err
}

// FromREST reads a rest-json request: the operation whose method and
// requestUri match r (its path after prefix, such as a stage), and its
// input from the URI's labels, the query string, the headers and the
// body (the payload member, or the other members as a JSON object), each
// member where its location says. A query parameter the operation does
// not take is kept under `?name`, so Validate refuses it.
func (m *Model) FromREST(r *http.Request, prefix string, body []byte) (string, map[string]any, error) {
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok {
		return "", nil, fmt.Errorf("path %s is not under %s", r.URL.EscapedPath(), prefix)
	}
	query := r.URL.Query()
	op, labels := m.route(r.Method, path, query)
	if op == "" {
		return "", nil, fmt.Errorf("%s has no operation %s %s", m.Service, r.Method, path)
	}
	s, _, err := m.input(op)
	if err != nil || s == nil {
		return op, map[string]any{}, err
	}
	in := map[string]any{}
	takes := map[string]bool{"x-id": true}
	_, lq, _ := strings.Cut(m.operations[op].HTTP.RequestURI, "?")
	for k := range literalQuery(lq) {
		takes[k] = true
	}
	for _, name := range sortedMembers(s) {
		mb := s.Members[name]
		ms := m.shapes[mb.Shape]
		if ms == nil {
			continue
		}
		switch mb.Location {
		case "uri":
			if v, ok := labels[mb.LocationName]; ok {
				in[name] = fromText(ms, v)
			}
		case "querystring":
			if ms.Type == "map" {
				for k := range query {
					takes[k] = true
				}
				continue
			}
			takes[mb.LocationName] = true
			vs, ok := query[mb.LocationName]
			switch {
			case !ok:
			case ms.Type == "list":
				items := make([]any, len(vs))
				for i, v := range vs {
					items[i] = fromText(m.shapes[ms.Member.Shape], v)
				}
				in[name] = items
			default:
				in[name] = fromText(ms, vs[0])
			}
		case "header":
			if vs := r.Header.Values(mb.LocationName); len(vs) > 0 {
				in[name] = fromText(ms, vs[0])
			}
		case "headers":
			got := map[string]any{}
			for k, vs := range r.Header {
				if rest, ok := cutPrefixFold(k, mb.LocationName); ok {
					got[strings.ToLower(rest)] = vs[0]
				}
			}
			if len(got) > 0 {
				in[name] = got
			}
		}
	}
	for k, vs := range query {
		if !takes[k] {
			in["?"+k] = vs[0]
		}
	}
	if s.Payload != "" {
		ps := m.shapes[s.Members[s.Payload].Shape]
		switch {
		case len(body) == 0:
		case ps.Type == "blob":
			in[s.Payload] = body
		case ps.Type == "string":
			in[s.Payload] = string(body)
		case m.Protocol == "rest-xml":
			v, err := m.fromXML(body, s.Members[s.Payload].Shape)
			if err != nil {
				return op, nil, err
			}
			in[s.Payload] = v
		default:
			obj, err := FromJSON(body)
			if err != nil {
				return op, nil, err
			}
			in[s.Payload] = obj
		}
		return op, in, nil
	}
	obj, err := FromJSON(body)
	if err != nil {
		return op, nil, err
	}
	for k, v := range obj {
		in[k] = v
	}
	return op, in, nil
}

// xmlNode is an XML element as read.
type xmlNode struct {
	XMLName xml.Name
	Text    string    `xml:",chardata"`
	Nodes   []xmlNode `xml:",any"`
}

// fromXML reads a rest-xml body of the structure shape as an input tree,
// by the shape: members by their element names, lists wrapped (items
// named member or their locationName) or flattened, scalars as text.
func (m *Model) fromXML(body []byte, shapeName string) (any, error) {
	var root xmlNode
	if err := xml.Unmarshal(body, &root); err != nil {
		return nil, fmt.Errorf("the body is not XML: %w", err)
	}
	return m.xmlValue(m.shapes[shapeName], root), nil
}

func (m *Model) xmlValue(s *shape, n xmlNode) any {
	if s == nil {
		return n.Text
	}
	switch s.Type {
	case "structure":
		obj := map[string]any{}
		byName := map[string]string{}
		for name, mb := range s.Members {
			byName[cmp.Or(mb.LocationName, name)] = name
		}
		for _, c := range n.Nodes {
			name, ok := byName[c.XMLName.Local]
			if !ok {
				obj[c.XMLName.Local] = c.Text // unknown: Validate refuses it
				continue
			}
			mb := s.Members[name]
			ms := m.shapes[mb.Shape]
			if ms != nil && ms.Type == "list" && (mb.Flattened || ms.Flattened) {
				items, _ := obj[name].([]any)
				obj[name] = append(items, m.xmlValue(m.shapes[ms.Member.Shape], c))
				continue
			}
			obj[name] = m.xmlValue(ms, c)
		}
		return obj
	case "list":
		items := []any{}
		for _, c := range n.Nodes {
			items = append(items, m.xmlValue(m.shapes[s.Member.Shape], c))
		}
		return items
	case "map":
		out := map[string]any{}
		for _, e := range n.Nodes {
			var k string
			var v any
			for _, c := range e.Nodes {
				switch c.XMLName.Local {
				case cmp.Or(s.Key.LocationName, "key"):
					k = c.Text
				case cmp.Or(s.Value.LocationName, "value"):
					v = m.xmlValue(m.shapes[s.Value.Shape], c)
				}
			}
			out[k] = v
		}
		return out
	}
	return fromText(s, n.Text)
}

// route finds the operation of method, path and query, and the values
// of its URI's labels: the requestUri's literal query parameters (such as
// S3's ?delete or ?list-type=2) must be present; of several, the one
// with the most literals wins. x-id, the routing hint some SDKs add,
// must name the operation.
func (m *Model) route(method, path string, query url.Values) (string, map[string]string) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	best, bestLiterals := "", -1
	var bestLabels map[string]string
	for _, name := range slices.Sorted(maps.Keys(m.operations)) {
		o := m.operations[name]
		if o.HTTP.Method != method {
			continue
		}
		if id, ok := query["x-id"]; ok && id[0] != name {
			continue
		}
		tmpl, lq, _ := strings.Cut(o.HTTP.RequestURI, "?")
		labels, literals, ok := match(strings.Split(strings.TrimPrefix(tmpl, "/"), "/"), segs)
		for k, v := range literalQuery(lq) {
			if got, present := query[k]; !present || v != "" && got[0] != v {
				ok = false
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestLiterals, bestLabels = name, literals, labels
		}
	}
	return best, bestLabels
}

// literalQuery reads a requestUri's literal query (such as "delete" or
// "list-type=2").
func literalQuery(q string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(q, "&") {
		if kv != "" {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	}
	return out
}

// match matches path segments against a template's; a greedy label
// {Name+} takes the rest.
func match(tmpl, segs []string) (map[string]string, int, bool) {
	labels := map[string]string{}
	literals := 0
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "+}") {
			if i >= len(segs) {
				return nil, 0, false
			}
			v, err := url.PathUnescape(strings.Join(segs[i:], "/"))
			if err != nil || v == "" {
				return nil, 0, false
			}
			labels[strings.Trim(t, "{+}")] = v
			return labels, literals, true
		}
		if i >= len(segs) {
			return nil, 0, false
		}
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			v, err := url.PathUnescape(segs[i])
			if err != nil || v == "" {
				return nil, 0, false
			}
			labels[strings.Trim(t, "{}")] = v
			continue
		}
		if t != segs[i] {
			return nil, 0, false
		}
		literals++
	}
	// a trailing slash ends the path (S3's /bucket/)
	trailing := len(segs) == len(tmpl)+1 && segs[len(segs)-1] == ""
	return labels, literals, len(tmpl) == len(segs) || trailing
}

// FromQuery reads a request of the query protocol (a form of Action,
// Version and the input's members: lists as Name.member.N, maps as
// Name.entry.N.key and .value, structures as Name.Member). A parameter
// the input does not take is kept by its name, so Validate refuses it.
func (m *Model) FromQuery(form url.Values) (string, map[string]any, error) {
	op := form.Get("Action")
	s, _, err := m.input(op)
	if err != nil {
		return op, nil, err
	}
	used := map[string]bool{"Action": true, "Version": true}
	in := map[string]any{}
	if s != nil {
		if obj, ok := m.queryStructure(form, used, "", s).(map[string]any); ok {
			in = obj
		}
	}
	for k, vs := range form {
		if !used[k] {
			in[k] = vs[0]
		}
	}
	return op, in, nil
}

func (m *Model) queryStructure(form url.Values, used map[string]bool, prefix string, s *shape) any {
	obj := map[string]any{}
	for _, name := range sortedMembers(s) {
		mb := s.Members[name]
		key := prefix + cmp.Or(mb.LocationName, name)
		if v, ok := m.queryValue(form, used, key, mb); ok {
			obj[name] = v
		}
	}
	return obj
}

func (m *Model) queryValue(form url.Values, used map[string]bool, key string, mb member) (any, bool) {
	s := m.shapes[mb.Shape]
	if s == nil {
		return nil, false
	}
	has := func(p string) bool {
		for k := range form {
			if k == p || strings.HasPrefix(k, p+".") {
				return true
			}
		}
		return false
	}
	switch s.Type {
	case "structure":
		if !has(key) {
			return nil, false
		}
		return m.queryStructure(form, used, key+".", s), true
	case "list":
		if vs, ok := form[key]; ok && len(vs) == 1 && vs[0] == "" {
			used[key] = true
			return []any{}, true
		}
		item := key + "." + cmp.Or(s.Member.LocationName, "member") + "."
		if mb.Flattened {
			item = key + "."
		}
		var items []any
		for n := 1; has(item + strconv.Itoa(n)); n++ {
			v, _ := m.queryValue(form, used, item+strconv.Itoa(n), *s.Member)
			items = append(items, v)
		}
		return items, items != nil
	case "map":
		out := map[string]any{}
		for n := 1; has(key + ".entry." + strconv.Itoa(n)); n++ {
			e := key + ".entry." + strconv.Itoa(n) + "."
			k, _ := m.queryValue(form, used, e+cmp.Or(s.Key.LocationName, "key"), *s.Key)
			v, _ := m.queryValue(form, used, e+cmp.Or(s.Value.LocationName, "value"), *s.Value)
			ks, _ := k.(string)
			out[ks] = v
		}
		return out, len(out) > 0
	}
	vs, ok := form[key]
	if !ok {
		return nil, false
	}
	used[key] = true
	return fromText(s, vs[0]), true
}

// fromText reads a value sent as text (a URI label, a query parameter,
// a header) as the type of s.
func fromText(s *shape, v string) any {
	if s == nil {
		return v
	}
	switch s.Type {
	case "integer", "long", "short", "byte", "float", "double":
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return json.Number(strings.TrimSpace(v))
		}
	case "boolean":
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	return v
}

func sortedMembers(s *shape) []string {
	return slices.Sorted(maps.Keys(s.Members))
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return "", false
}
