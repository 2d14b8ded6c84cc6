package bedrock

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// DefaultInput is what a Converse model takes besides text unless
// configured: images and documents.
var DefaultInput = llm.Accepts{chat.PartImage, chat.PartFile}

// imageFormats are Converse's image formats (ImageFormat) by media type.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// documentFormats are Converse's document formats (DocumentFormat) by
// media type.
var documentFormats = map[string]string{
	"application/pdf":    "pdf",
	"text/csv":           "csv",
	"application/msword": "doc",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
	"application/vnd.ms-excel": "xls",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
	"text/html":     "html",
	"text/plain":    "txt",
	"text/markdown": "md",
}

type (
	// imageBlock is ImageBlock with its bytes (base64 in JSON, as
	// restJson1 sends a blob).
	imageBlock struct {
		Format string      `json:"format"`
		Source bytesSource `json:"source"`
	}
	// documentBlock is DocumentBlock with its bytes.
	documentBlock struct {
		Format string      `json:"format"`
		Name   string      `json:"name"`
		Source bytesSource `json:"source"`
	}
	bytesSource struct {
		Bytes []byte `json:"bytes"`
	}
)

var _ llm.PartsChecker = (*Converse)(nil)

// CheckPart implements llm.PartsChecker: Converse takes the kinds its
// input says, images as bytes in its formats, documents in its formats,
// and no audio.
func (c *Converse) CheckPart(p chat.Part) error {
	refuse := func(reason string) error {
		return &llm.UnsupportedError{Provider: c.name, Param: string(p.Type), Reason: reason}
	}
	switch {
	case p.Type == chat.PartAudio:
		return refuse("Bedrock Converse takes no audio here")
	case p.Type == chat.PartImage && p.URL != "" && c.images == nil:
		return refuse("Bedrock Converse takes an image's bytes, not its URL, and this provider fetches none: send the image as a data: URL (data:image/png;base64,...)")
	}
	if err := c.input.Check(c.name, p); err != nil {
		return err
	}
	switch _, isImage := imageFormats[p.MediaType]; {
	case p.Type == chat.PartImage && p.URL != "":
		return nil // its type is known once fetched
	case p.Type == chat.PartImage && !isImage:
		return refuse("Bedrock Converse takes png, jpeg, gif and webp images, not " + p.MediaType)
	case p.Type == chat.PartFile && documentFormats[p.MediaType] == "":
		return refuse("Bedrock Converse takes documents of pdf, csv, doc, docx, xls, xlsx, html, txt and md, not " + p.MediaType)
	}
	return nil
}

// fetchImages returns msgs with the images given by URL fetched (a copy
// of what it changes): at most the default image limit of bytes, which
// must be of an image format Converse takes.
func (c *Converse) fetchImages(ctx context.Context, msgs []chat.Message) ([]chat.Message, error) {
	out, copied := msgs, false
	for i, m := range msgs {
		partsCopied := false
		for j, p := range m.Parts {
			if p.URL == "" {
				continue
			}
			if !copied {
				out, copied = slices.Clone(msgs), true
			}
			if !partsCopied {
				out[i].Parts, partsCopied = slices.Clone(m.Parts), true
			}
			data, err := c.fetchImage(ctx, p.URL, chat.DefaultLimits.Of(chat.PartImage))
			if err != nil {
				return nil, fmt.Errorf("messages[%d].parts[%d]: %w", i, j, err)
			}
			out[i].Parts[j] = chat.Part{Type: chat.PartImage, MediaType: chat.SniffMediaType(data), Data: data, Detail: p.Detail}
		}
	}
	return out, nil
}

// fetchImage GETs the image at u: an answer of 200 with at most limit
// bytes of PNG, JPEG, GIF or WebP.
func (c *Converse) fetchImage(ctx context.Context, u string, limit int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch image: %w", err)
	}
	resp, err := c.images.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch image: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch image %s: status %d", u, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("fetch image %s: %w", u, err)
	case len(data) > limit:
		return nil, fmt.Errorf("fetch image %s: larger than the limit of %d bytes", u, limit)
	}
	if _, ok := imageFormats[chat.SniffMediaType(data)]; !ok {
		return nil, fmt.Errorf("fetch image %s: not a png, jpeg, gif or webp image", u)
	}
	return data, nil
}

// partBlock is the image or document block of a part CheckPart took.
func partBlock(p chat.Part, n int) contentBlock {
	if p.Type == chat.PartImage {
		return contentBlock{Image: &imageBlock{Format: imageFormats[p.MediaType], Source: bytesSource{p.Data}}}
	}
	return contentBlock{Document: &documentBlock{Format: documentFormats[p.MediaType], Name: documentName(p.Name, n), Source: bytesSource{p.Data}}}
}

// documentName is a file's name as Converse takes a document's: letters,
// digits, single spaces, hyphens, parentheses and square brackets, at
// most 200 characters; the extension, which the format says, left out.
// n numbers a document without a name, as names must differ in a request.
func documentName(name string, n int) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !slices.Contains([]rune("-()[]"), r)
	}), " ")
	if name == "" {
		name = "document " + strconv.Itoa(n)
	}
	return string([]rune(name)[:min(len([]rune(name)), 200)])
}
