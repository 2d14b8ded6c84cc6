// Package mediatest makes the files media's tests and the end-to-end
// tests send: a PDF with a text layer, as a PDF writer makes one.
package mediatest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// PDF returns a one-page PDF showing lines, its content stream
// compressed with FlateDecode when flate is set: a catalog, a page tree,
// a page with a Helvetica font, the content, and a cross-reference table
// with the offsets of the objects.
func PDF(flate bool, lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 12 Tf 72 720 Td\n")
	for i, l := range lines {
		if i > 0 {
			content.WriteString("0 -14 Td\n")
		}
		r := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`)
		fmt.Fprintf(&content, "(%s) Tj\n", r.Replace(l))
	}
	content.WriteString("ET\n")
	stream, filter := []byte(content.String()), ""
	if flate {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(stream)
		w.Close()
		stream, filter = z.Bytes(), " /Filter /FlateDecode"
	}
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), filter, stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}
