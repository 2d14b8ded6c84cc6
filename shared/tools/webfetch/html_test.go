package webfetch

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHTMLText(t *testing.T) {
	base, err := url.Parse("https://example.com/docs/page.html")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in, want string
	}{
		{"title and body",
			`<html><head><title>My   Page</title></head><body><p>Hello <em>there</em>, world.</p></body></html>`,
			"Title: My Page\n\nHello there, world."},
		{"no title", `<p>just text</p>`, "just text"},
		{"title only", `<title>Only</title>`, "Title: Only"},
		{"drops invisible parts",
			`<head><style>.a{color:red}</style><script>var x=1</script></head><body>visible<script>evil()</script><noscript>enable js</noscript><template><p>t</p></template></body>`,
			"visible"},
		{"collapses whitespace", "<p>  a \n\n\t b   c  </p>", "a b c"},
		{"headings", `<h1>Top</h1><p>para</p><h3>Sub</h3>text`, "# Top\n\npara\n\n### Sub\n\ntext"},
		{"lists", `<ul><li>one</li><li> two <b>2</b></li></ul><ol><li>first</li></ol>`, "- one\n- two 2\n- first"},
		{"paragraphs", `<p>a</p><p>b</p><div>c</div><div>d</div>`, "a\n\nb\n\nc\nd"},
		{"line breaks", `line one<br>line two<br/>line three`, "line one\nline two\nline three"},
		{"links",
			`<p>See <a href="/about">about us</a>, <a href="https://go.dev/">https://go.dev/</a>, <a href="#top">top</a>, <a href="javascript:x()">js</a>, <a href="other.html">rel</a>.</p>`,
			"See about us (https://example.com/about), https://go.dev/, top, js, rel (https://example.com/docs/other.html)."},
		{"table", `<table><tr><th>name</th><th>size</th></tr><tr><td>a</td><td>1</td></tr></table>`, "name | size\na | 1"},
		{"pre keeps layout", "<p>before</p><pre>x  = 1\n  y = 2</pre><p>after</p>", "before\n\nx  = 1\n  y = 2\n\nafter"},
		{"images", `<p><img src="a.png" alt="a cat"> and <img src="b.png"></p>`, "[image: a cat] and"},
		{"entities", `<p>fish &amp; chips &lt;3 &nbsp;caf&eacute;</p>`, "fish & chips <3 café"},
		{"broken markup", `<div><p>unclosed <b>bold<div>next`, "unclosed bold\n\nnext"},
		{"form controls dropped", `<form><label>Name</label><input value="x"><button>Send</button><select><option>o</option></select></form>`, "Name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, htmlText(tc.in, base)); diff != "" {
				t.Errorf("htmlText mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
