package webfetch

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlText renders an HTML document as readable plain text: the title
// first, then the visible text with block structure kept as line breaks,
// headings marked with "#", list items with "- " and links followed by their
// absolute URL. Scripts, styles and other invisible parts are dropped.
func htmlText(doc string, base *url.URL) string {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		// html.Parse only fails on reader errors, which a string cannot give.
		return doc
	}
	w := &textWriter{base: base}
	title := ""
	if t := find(root, atom.Title); t != nil {
		title = collapse(textOf(t))
	}
	if body := find(root, atom.Body); body != nil {
		w.walk(body)
	} else {
		w.walk(root)
	}
	text := tidy(w.b.String())
	switch {
	case title == "":
		return text
	case text == "":
		return "Title: " + title
	}
	return "Title: " + title + "\n\n" + text
}

// skipped elements hold nothing a reader sees.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Iframe: true, atom.Object: true,
	atom.Canvas: true, atom.Audio: true, atom.Video: true, atom.Select: true,
	atom.Button: true, atom.Input: true, atom.Textarea: true,
}

// blocks start and end on their own line.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Dd: true, atom.Details: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.Header: true, atom.Main: true, atom.Nav: true, atom.Ol: true,
	atom.Section: true, atom.Summary: true, atom.Table: true, atom.Tr: true, atom.Ul: true,
	atom.Caption: true, atom.Tbody: true, atom.Thead: true, atom.Tfoot: true,
}

// paragraphs are separated from their neighbours by a blank line.
var paragraphs = map[atom.Atom]bool{atom.P: true, atom.Pre: true, atom.Hr: true}

var headings = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// textWriter accumulates text, collapsing whitespace outside <pre>.
type textWriter struct {
	b     strings.Builder
	base  *url.URL
	pre   int  // depth of <pre> elements
	space bool // a space is pending before the next word
	cells int  // cells written in the current table row
}

func (w *textWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
	case html.DocumentNode:
		w.children(n)
		return
	default:
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	if level, ok := headings[n.DataAtom]; ok {
		w.newlines(2)
		w.raw(strings.Repeat("#", level) + " ")
		w.children(n)
		w.newlines(2)
		return
	}
	switch n.DataAtom {
	case atom.Br:
		w.newlines(1)
		w.space = false
	case atom.Hr:
		w.newlines(2)
		w.raw("---")
		w.newlines(2)
	case atom.Li:
		w.newlines(1)
		w.raw("- ")
		w.children(n)
		w.newlines(1)
	case atom.Tr:
		w.newlines(1)
		w.cells = 0
		w.children(n)
		w.newlines(1)
	case atom.Td, atom.Th:
		if w.cells > 0 {
			w.raw(" | ")
		}
		w.cells++
		w.children(n)
	case atom.Pre:
		w.newlines(2)
		w.pre++
		w.children(n)
		w.pre--
		w.newlines(2)
	case atom.Img:
		if alt := collapse(attr(n, "alt")); alt != "" {
			w.text("[image: " + alt + "]")
		}
	case atom.A:
		w.children(n)
		if href := w.link(attr(n, "href")); href != "" && href != collapse(textOf(n)) {
			w.text(" (" + href + ")")
		}
	default:
		switch {
		case paragraphs[n.DataAtom]:
			w.newlines(2)
			w.children(n)
			w.newlines(2)
		case blocks[n.DataAtom]:
			w.newlines(1)
			w.children(n)
			w.newlines(1)
		default:
			w.children(n)
		}
	}
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// link resolves href against the page URL, keeping only http(s) links.
func (w *textWriter) link(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return ""
	}
	return u.String()
}

// text writes s, collapsing runs of whitespace to one space outside <pre>.
func (w *textWriter) text(s string) {
	if w.pre > 0 {
		w.b.WriteString(strings.ReplaceAll(s, "\r\n", "\n"))
		w.space = false
		return
	}
	if s == "" {
		return
	}
	if isSpace(s[0]) {
		w.space = true
	}
	for _, word := range strings.Fields(s) {
		if w.space && !w.afterSpace() {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(word)
		w.space = true
	}
	w.space = isSpace(s[len(s)-1])
}

// raw writes s as is, after a pending space.
func (w *textWriter) raw(s string) {
	if w.space && !w.afterSpace() {
		w.b.WriteByte(' ')
	}
	w.b.WriteString(s)
	w.space = false
}

// newlines ends the current line so that at least n line breaks separate
// it from what follows. Nothing is written at the very start.
func (w *textWriter) newlines(n int) {
	s := w.b.String()
	if s == "" {
		return
	}
	have := len(s) - len(strings.TrimRight(s, "\n"))
	if n > have {
		w.b.WriteString(strings.Repeat("\n", n-have))
	}
	w.space = false
}

// afterSpace reports whether the text so far is empty or ends in a space or
// line break, so no separating space is needed.
func (w *textWriter) afterSpace() bool {
	s := w.b.String()
	return s == "" || isSpace(s[len(s)-1])
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// tidy trims trailing spaces on every line and keeps at most one blank
// line between paragraphs.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func find(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			return
		}
		if n.Type == html.ElementNode && skipped[n.DataAtom] && n.DataAtom != atom.Head {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
