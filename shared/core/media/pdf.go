package media

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// The bounds of reading a PDF: the bytes one stream may inflate to and
// all of them together, so that a small compressed bomb stays small.
const (
	maxStream   = 16 << 20
	maxInflated = 64 << 20
)

// PDFText returns the text layer of a PDF: the strings its content
// streams show (the operators Tj, TJ, ' and "), a line per text line, in
// the order of the streams in the file (uncompressed or FlateDecode).
// Fonts are not read: text in a font's own encoding (CID fonts without
// a standard encoding) is refused rather than returned garbled. A file
// that is not a PDF, whose streams do not inflate, or with no text (a
// scan) is an error saying so.
func PDFText(data []byte) (string, error) {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return "", errors.New("not a PDF: the file does not start with %PDF-")
	}
	var out strings.Builder
	var streams, inflated int
	var bad error
	for rest := data; ; {
		dict, body, next, ok := nextStream(rest)
		if !ok {
			break
		}
		rest = next
		if skipStream(dict) {
			continue
		}
		if bytes.Contains(dict, []byte("/Filter")) {
			if !bytes.Contains(dict, []byte("/FlateDecode")) {
				continue // images and fonts in other encodings
			}
			raw, err := inflate(body, maxInflated-inflated)
			if err != nil {
				bad = err
				continue
			}
			inflated += len(raw)
			body = raw
		}
		streams++
		showText(body, &out)
	}
	text := strings.TrimSpace(out.String())
	switch {
	case text == "" && bad != nil:
		return "", fmt.Errorf("the PDF is corrupt: %w", bad)
	case text == "" && streams == 0:
		return "", errors.New("the PDF is corrupt or empty: no content stream could be read")
	case text == "":
		return "", errors.New("the PDF has no text layer (a scanned document?)")
	case !readable(text):
		return "", errors.New("the PDF's text is in fonts this reader cannot decode")
	}
	return text, nil
}

// nextStream finds the next stream of data: its dictionary, its raw
// bytes, and what follows its endstream.
func nextStream(data []byte) (dict, body, rest []byte, ok bool) {
	for {
		i := bytes.Index(data, []byte("stream"))
		if i < 0 {
			return nil, nil, nil, false
		}
		// "endstream" contains "stream": only a keyword after ">>" starts one.
		head := bytes.TrimRight(data[:i], " \t\r\n")
		if !bytes.HasSuffix(head, []byte(">>")) {
			data = data[i+len("stream"):]
			continue
		}
		start := bytes.LastIndex(head, []byte(" obj"))
		if start < 0 {
			start = bytes.LastIndex(head, []byte("obj"))
		}
		dict = head[max(start, 0):]
		b := data[i+len("stream"):]
		if bytes.HasPrefix(b, []byte("\r\n")) {
			b = b[2:]
		} else if len(b) > 0 && (b[0] == '\n' || b[0] == '\r') {
			b = b[1:]
		}
		end := bytes.Index(b, []byte("endstream"))
		if end < 0 {
			return nil, nil, nil, false
		}
		return dict, bytes.TrimRight(b[:end], "\r\n"), b[end+len("endstream"):], true
	}
}

// skipStream reports a stream that holds no page content: images, fonts,
// metadata, cross-reference and object streams.
func skipStream(dict []byte) bool {
	lex := lexer{b: dict}
	for {
		t, ok := lex.next()
		if !ok {
			return false
		}
		switch t.text {
		case "/Image", "/FontFile", "/FontFile2", "/FontFile3", "/Length1", "/XRef", "/ObjStm", "/Metadata", "/EmbeddedFile":
			return true
		}
	}
}

// inflate decompresses a FlateDecode stream, at most limit bytes of it.
func inflate(body []byte, limit int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("a stream does not inflate: %w", err)
	}
	defer zr.Close()
	limit = min(limit, maxStream)
	raw, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("a stream does not inflate: %w", err)
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("a stream inflates beyond %d bytes", limit)
	}
	return raw, nil
}

// showText writes the text the content stream c shows to out.
func showText(c []byte, out *strings.Builder) {
	lex := lexer{b: c}
	var ops []token
	line := func() {
		if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteByte('\n')
		}
	}
	for {
		t, ok := lex.next()
		if !ok {
			return
		}
		if t.kind != opToken {
			ops = append(ops, t)
			continue
		}
		switch t.text {
		case "Tj":
			writeStrings(out, ops)
		case "'", `"`:
			line()
			writeStrings(out, ops)
		case "TJ":
			for _, o := range ops {
				switch {
				case o.kind == stringToken:
					out.WriteString(decode(o.text))
				case o.kind == numberToken && o.num < -200:
					out.WriteByte(' ')
				}
			}
		case "T*", "ET":
			line()
		case "Td", "TD":
			if len(ops) >= 2 && ops[len(ops)-1].num != 0 {
				line()
			} else if len(ops) >= 2 && ops[len(ops)-2].num > 0 {
				out.WriteByte(' ')
			}
		case "Tm":
			line()
		case "ID":
			lex.skipInlineImage()
		}
		ops = ops[:0]
	}
}

// writeStrings writes the last string operand of ops.
func writeStrings(out *strings.Builder, ops []token) {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].kind == stringToken {
			out.WriteString(decode(ops[i].text))
			return
		}
	}
}

// decode reads a PDF string: UTF-16BE after its byte order mark, else
// PDFDocEncoding, read as Latin-1 (which it is for the letters of text).
func decode(s string) string {
	b := []byte(s)
	if len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff {
		u := make([]uint16, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// readable reports whether most of text is letters, digits, punctuation
// and spaces, as text in a standard encoding is and glyph ids are not.
func readable(text string) bool {
	var good, all int
	for _, r := range text {
		all++
		if unicode.IsGraphic(r) || unicode.IsSpace(r) {
			good++
		}
	}
	return good*10 >= all*9
}

type tokenKind int

const (
	opToken tokenKind = iota
	stringToken
	numberToken
	otherToken
)

type token struct {
	kind tokenKind
	text string
	num  float64
}

// lexer splits a content stream into operands and operators.
type lexer struct {
	b []byte
	i int
}

func (l *lexer) next() (token, bool) {
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0:
			l.i++
		case c == '%':
			for l.i < len(l.b) && l.b[l.i] != '\n' && l.b[l.i] != '\r' {
				l.i++
			}
		case c == '(':
			return token{kind: stringToken, text: l.literal()}, true
		case c == '<' && l.i+1 < len(l.b) && l.b[l.i+1] == '<', c == '>' && l.i+1 < len(l.b) && l.b[l.i+1] == '>':
			l.i += 2
			return token{kind: otherToken}, true
		case c == '<':
			return token{kind: stringToken, text: l.hex()}, true
		case c == '[' || c == ']' || c == '{' || c == '}' || c == '>' || c == ')':
			l.i++
			return token{kind: otherToken}, true
		default:
			start := l.i
			l.i++
			for l.i < len(l.b) && !strings.ContainsRune(" \t\r\n\f\x00()<>[]{}/%", rune(l.b[l.i])) {
				l.i++
			}
			w := string(l.b[start:l.i])
			if c == '/' {
				return token{kind: otherToken, text: w}, true
			}
			if n, err := strconv.ParseFloat(w, 64); err == nil {
				return token{kind: numberToken, text: w, num: n}, true
			}
			return token{kind: opToken, text: w}, true
		}
	}
	return token{}, false
}

// literal reads a (string): balanced parentheses, backslash escapes.
func (l *lexer) literal() string {
	var b []byte
	depth := 0
	for l.i++; l.i < len(l.b); l.i++ {
		c := l.b[l.i]
		switch c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				l.i++
				return string(b)
			}
			depth--
		case '\\':
			l.i++
			if l.i >= len(l.b) {
				return string(b)
			}
			e := l.b[l.i]
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r', '\n':
				if e == '\r' && l.i+1 < len(l.b) && l.b[l.i+1] == '\n' {
					l.i++
				}
				continue
			default:
				if e >= '0' && e <= '7' {
					v := 0
					for k := 0; k < 3 && l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '7'; k++ {
						v = v*8 + int(l.b[l.i]-'0')
						l.i++
					}
					l.i--
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// hex reads a <hex string>.
func (l *lexer) hex() string {
	var digits []byte
	for l.i++; l.i < len(l.b) && l.b[l.i] != '>'; l.i++ {
		if c := l.b[l.i]; strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 {
			digits = append(digits, c)
		}
	}
	l.i++
	if len(digits)%2 == 1 {
		digits = append(digits, '0')
	}
	b := make([]byte, len(digits)/2)
	for k := range b {
		v, _ := strconv.ParseUint(string(digits[2*k:2*k+2]), 16, 8)
		b[k] = byte(v)
	}
	return string(b)
}

// skipInlineImage skips an inline image's data after its ID operator, up
// to its EI.
func (l *lexer) skipInlineImage() {
	if i := bytes.Index(l.b[l.i:], []byte("EI")); i >= 0 {
		l.i += i + 2
		return
	}
	l.i = len(l.b)
}
