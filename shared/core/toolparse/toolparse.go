// Package toolparse extracts tool calls from a model's reply with the
// fallback chain of seed 000 ADR-005: the provider's native tool calls, then
// XML tags in the text, then fenced JSON blocks, then none.
//
// Only structured delimiters count. JSON in free text is never read as a
// call, so text a model quotes from a web page or a tool result cannot
// become a call by looking like one. When in doubt a block is dropped: a
// missed call costs a retry, a hallucinated one can run a tool.
package toolparse

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// toolName is what a plausible tool name looks like.
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// xmlTags are the elements that wrap a call in the text.
var xmlTags = []string{"tool_call", "toolcall", "invoke"}

// Parse returns the tool calls in m, from the first step of the chain that
// yields any:
//
//  1. m.ToolCalls, as they are, except that a call without an ID gets
//     idPrefix+"_<n>", n being its index;
//  2. <tool_call>, <toolcall> or <invoke> blocks in m.Content, holding
//     either <name> and <args> (or <arguments>) elements, or a JSON object
//     {"name": …, "arguments": {…}}; blocks inside fenced code are quoted
//     examples and are skipped;
//  3. fenced code blocks marked json or tool_call whose whole content is an
//     object with exactly the keys "tool" (or "name") and "args" (or
//     "arguments").
//
// Calls found in the text get the IDs idPrefix+"_0", idPrefix+"_1", … in
// order, so parsing the same reply again gives the same IDs. Their
// arguments are compact JSON object text. A block whose name is not a
// plausible tool name ([A-Za-z0-9_.-], at most 64) or whose arguments are
// not a JSON object is dropped, as are unclosed and nested blocks. So is a
// block that quotes: one whose text, spacing aside, occurs in any of
// quoted — the tool results, files and user messages the model was shown
// — since the model repeating a file that holds a call is not calling.
// Parse returns nil when there are no calls.
func Parse(m chat.Message, idPrefix string, quoted ...string) []chat.ToolCall {
	if len(m.ToolCalls) > 0 {
		calls := slices.Clone(m.ToolCalls)
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = callID(idPrefix, i)
			}
		}
		return calls
	}
	for _, step := range []func(string) []block{xmlCalls, fencedCalls} {
		blocks := dropQuotes(m.Content, step(m.Content), quoted)
		if len(blocks) == 0 {
			continue
		}
		calls := make([]chat.ToolCall, len(blocks))
		for i, b := range blocks {
			calls[i] = chat.ToolCall{ID: callID(idPrefix, i), Name: b.name, Arguments: b.args}
		}
		return calls
	}
	return nil
}

// StripCalls returns content without the XML and fenced blocks that Parse
// reads as tool calls, trimmed: what a person should see of the reply.
// Blocks that are not valid calls stay, as does any other code block.
func StripCalls(content string) string {
	blocks := append(xmlCalls(content), fencedCalls(content)...)
	cuts := make([][2]int, len(blocks))
	for i, b := range blocks {
		start, end := wholeLines(content, b.start, b.end)
		cuts[i] = [2]int{start, end}
	}
	slices.SortFunc(cuts, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	last := 0
	for _, c := range cuts {
		if c[1] <= last {
			continue
		}
		if c[0] > last {
			out.WriteString(content[last:c[0]])
		}
		last = c[1]
	}
	out.WriteString(content[last:])
	return strings.TrimSpace(out.String())
}

// wholeLines widens [start, end) to its whole lines, line break included,
// when the block is alone on them, so that removing it leaves no blank line;
// between two blank lines, it takes one of them too.
func wholeLines(s string, start, end int) (int, int) {
	ls := start
	for ls > 0 && (s[ls-1] == ' ' || s[ls-1] == '\t') {
		ls--
	}
	if ls > 0 && s[ls-1] != '\n' {
		return start, end
	}
	le := end
	for le < len(s) && (s[le] == ' ' || s[le] == '\t' || s[le] == '\r') {
		le++
	}
	if le == len(s) {
		return ls, le
	}
	if s[le] != '\n' {
		return start, end
	}
	le++
	if blankBefore := strings.HasSuffix(strings.TrimSuffix(s[:ls], "\n"), "\n"); blankBefore {
		if rest := strings.TrimLeft(s[le:], " \t\r"); strings.HasPrefix(rest, "\n") {
			le = len(s) - len(rest) + 1
		}
	}
	return ls, le
}

// dropQuotes removes the blocks whose text occurs in one of quoted.
func dropQuotes(content string, blocks []block, quoted []string) []block {
	if len(blocks) == 0 || len(quoted) == 0 {
		return blocks
	}
	var flat []string
	kept := blocks[:0]
	for _, b := range blocks {
		text := collapseSpace(content[b.start:b.end])
		if flat == nil {
			flat = make([]string, len(quoted))
			for i, q := range quoted {
				flat[i] = collapseSpace(q)
			}
		}
		if !slices.ContainsFunc(flat, func(q string) bool { return strings.Contains(q, text) }) {
			kept = append(kept, b)
		}
	}
	return kept
}

// collapseSpace turns every run of white space, escaped line breaks and
// tabs included, into one space, so that a quote re-indented or taken
// from JSON text still matches.
func collapseSpace(s string) string {
	s = strings.NewReplacer(`\n`, " ", `\r`, " ", `\t`, " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// block is a valid call found in the text, at content[start:end].
type block struct {
	start, end int
	name, args string
}

func callID(prefix string, n int) string {
	return prefix + "_" + strconv.Itoa(n)
}

// xmlCalls returns the valid XML tool-call blocks of content, in order.
func xmlCalls(content string) []block {
	fences := codeFences(content)
	var out []block
	for pos := 0; ; {
		open, tag := nextOpenTag(content, pos)
		if open < 0 {
			return out
		}
		bodyStart := open + len(tag) + 2
		pos = bodyStart
		if insideFence(fences, open) {
			continue
		}
		closeTag := "</" + tag + ">"
		n := strings.Index(content[bodyStart:], closeTag)
		if n < 0 {
			continue
		}
		body := content[bodyStart : bodyStart+n]
		end := bodyStart + n + len(closeTag)
		pos = end
		if nested, _ := nextOpenTag(body, 0); nested >= 0 {
			continue
		}
		var name, args string
		var ok bool
		if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") {
			name, args, ok = jsonCall(t, false)
		} else {
			name, args, ok = elementCall(t)
		}
		if ok {
			out = append(out, block{start: open, end: end, name: name, args: args})
		}
	}
}

// nextOpenTag returns the index and name of the first opening call tag in
// s at or after pos, or -1.
func nextOpenTag(s string, pos int) (int, string) {
	best, name := -1, ""
	for _, tag := range xmlTags {
		if i := strings.Index(s[pos:], "<"+tag+">"); i >= 0 && (best < 0 || pos+i < best) {
			best, name = pos+i, tag
		}
	}
	return best, name
}

// elementCall reads a body made only of <name>, and <args> or <arguments>,
// elements and whitespace. Missing arguments mean none: "{}".
func elementCall(body string) (name, args string, ok bool) {
	var haveName, haveArgs bool
	for rest := body; rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] != '<' {
			return "", "", false
		}
		gt := strings.IndexByte(rest, '>')
		if gt < 0 {
			return "", "", false
		}
		tag := rest[1:gt]
		closeTag := "</" + tag + ">"
		n := strings.Index(rest[gt+1:], closeTag)
		if n < 0 {
			return "", "", false
		}
		text := rest[gt+1 : gt+1+n]
		rest = rest[gt+1+n+len(closeTag):]
		switch tag {
		case "name":
			if haveName {
				return "", "", false
			}
			name, haveName = strings.TrimSpace(text), true
		case "args", "arguments":
			if haveArgs {
				return "", "", false
			}
			args, haveArgs = text, true
		default:
			return "", "", false
		}
	}
	if !haveName || !toolName().MatchString(name) {
		return "", "", false
	}
	if strings.TrimSpace(args) == "" {
		return name, "{}", true
	}
	args, ok = objectText([]byte(args))
	return name, args, ok
}

// jsonCall reads a call written as a JSON object with a "name" (or "tool")
// string and an "arguments" (or "args") object. strict requires exactly
// those two keys; otherwise other keys are ignored and missing arguments
// mean none.
func jsonCall(text string, strict bool) (name, args string, ok bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil || fields == nil {
		return "", "", false
	}
	rawName, ok := either(fields, "name", "tool")
	if !ok || rawName == nil {
		return "", "", false
	}
	rawArgs, ok := either(fields, "arguments", "args")
	if !ok || strict && (rawArgs == nil || len(fields) != 2) {
		return "", "", false
	}
	if err := json.Unmarshal(rawName, &name); err != nil || !toolName().MatchString(name) {
		return "", "", false
	}
	if rawArgs == nil {
		return name, "{}", true
	}
	args, ok = objectText(rawArgs)
	return name, args, ok
}

// either returns the value of key a or of key b, nil if neither is set, and
// false if both are.
func either(fields map[string]json.RawMessage, a, b string) (json.RawMessage, bool) {
	va, hasA := fields[a]
	vb, hasB := fields[b]
	switch {
	case hasA && hasB:
		return nil, false
	case hasB:
		return vb, true
	}
	return va, true
}

// objectText returns raw as compact JSON if it is a JSON object.
func objectText(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return "", false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", false
	}
	return buf.String(), true
}

// fencedCalls returns the fenced json or tool_call blocks of content that
// are exactly a call, in order.
func fencedCalls(content string) []block {
	var out []block
	for _, f := range codeFences(content) {
		if !f.closed {
			continue
		}
		lang, _, _ := strings.Cut(f.info, " ")
		switch strings.ToLower(lang) {
		case "json", "tool_call":
		default:
			continue
		}
		if name, args, ok := jsonCall(strings.TrimSpace(f.body), true); ok {
			out = append(out, block{start: f.start, end: f.end, name: name, args: args})
		}
	}
	return out
}

// fence is a fenced code block at content[start:end]. An unclosed fence
// runs to the end of the content, as in CommonMark.
type fence struct {
	start, end int
	info, body string
	closed     bool
}

// codeFences returns the fenced code blocks of content: a line of three or
// more backticks or tildes (indented at most three spaces) opens one, and a
// line of at least as many of the same character closes it.
func codeFences(content string) []fence {
	var out []fence
	for i := 0; i < len(content); {
		line, next := lineAt(content, i)
		ch, n, info, ok := openingFence(line)
		if !ok {
			i = next
			continue
		}
		f := fence{start: i, end: len(content), info: info}
		bodyStart := next
		for j := next; j < len(content); {
			l, nj := lineAt(content, j)
			if closingFence(l, ch, n) {
				f.body, f.end, f.closed = content[bodyStart:j], j+len(l), true
				break
			}
			j = nj
		}
		if !f.closed {
			f.body = content[bodyStart:]
			return append(out, f)
		}
		out = append(out, f)
		_, i = lineAt(content, f.end)
	}
	return out
}

func insideFence(fences []fence, i int) bool {
	for _, f := range fences {
		if f.start <= i && i < f.end {
			return true
		}
	}
	return false
}

// lineAt returns the line starting at i, without its line break, and the
// index of the next line.
func lineAt(s string, i int) (string, int) {
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		return s[i : i+n], i + n + 1
	}
	return s[i:], len(s)
}

// fenceRun splits an indented run of backticks or tildes off line.
func fenceRun(line string) (ch byte, n int, rest string, ok bool) {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if indent > 3 {
		return 0, 0, "", false
	}
	line = line[indent:]
	if line == "" || line[0] != '`' && line[0] != '~' {
		return 0, 0, "", false
	}
	ch = line[0]
	for n < len(line) && line[n] == ch {
		n++
	}
	return ch, n, line[n:], n >= 3
}

func openingFence(line string) (ch byte, n int, info string, ok bool) {
	ch, n, rest, ok := fenceRun(line)
	if !ok || ch == '`' && strings.ContainsRune(rest, '`') {
		return 0, 0, "", false
	}
	return ch, n, strings.TrimSpace(rest), true
}

func closingFence(line string, ch byte, n int) bool {
	c, m, rest, ok := fenceRun(line)
	return ok && c == ch && m >= n && strings.TrimSpace(rest) == ""
}
