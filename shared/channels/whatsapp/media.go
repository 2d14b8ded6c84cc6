package whatsapp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// mediaBody is an image or a document of a message: sent by its media
// id (UploadMedia), received with its id and type.
type mediaBody struct {
	ID       string `json:"id"`
	Caption  string `json:"caption,omitempty"`
	Filename string `json:"filename,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	// Voice marks an audio message recorded as a voice note.
	Voice bool `json:"voice,omitempty"`
}

// maxImage is the largest image WhatsApp takes as an image message
// (5 MB); a larger one goes as a document (up to 100 MB).
const maxImage = 5 << 20

// Media returns the bytes of the media id a message carried: GET /<id>
// gives its URL and size, and the URL (on WhatsApp's lookaside host, or
// the API's own) is fetched with the token. A file over max is
// channel.ErrTooLarge.
func (c *Client) Media(ctx context.Context, id string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/"+url.PathEscape(id), nil)
	if err != nil {
		return nil, fmt.Errorf("whatsapp GET /{media-id}: %w", err)
	}
	var m struct {
		URL      string `json:"url"`
		FileSize int64  `json:"file_size"`
	}
	if err := c.do(ctx, req, "GET /{media-id}", &m); err != nil {
		return nil, err
	}
	if m.FileSize > max {
		return nil, channel.ErrTooLarge
	}
	u, err := url.Parse(m.URL)
	api, _ := url.Parse(c.base)
	lookaside := err == nil && u.Scheme == "https" && u.Host == "lookaside.fbsbx.com"
	if !lookaside && (err != nil || u.Scheme != api.Scheme || u.Host != api.Host) {
		return nil, &channel.Error{Platform: Name, Method: "download", Message: "not a WhatsApp media URL", Permanent: true}
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, m.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("whatsapp download: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("whatsapp download: %s", c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &channel.Error{Platform: Name, Method: "download", Status: resp.StatusCode, Message: resp.Status, Permanent: resp.StatusCode < 500}
	}
	data, err := channel.ReadAtMost(resp.Body, max)
	if err != nil && !errors.Is(err, channel.ErrTooLarge) {
		return nil, fmt.Errorf("whatsapp download: %s", c.scrub(err.Error()))
	}
	return data, err
}

// UploadMedia uploads a file for messages (POST /<phone number id>/media,
// multipart) and returns its media id.
func (c *Client) UploadMedia(ctx context.Context, f channel.File) (string, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	err := w.WriteField("messaging_product", "whatsapp")
	if err == nil {
		err = w.WriteField("type", f.MediaType)
	}
	if err == nil {
		err = f.WritePart(w, "file")
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return "", fmt.Errorf("whatsapp upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+url.PathEscape(c.phoneID)+"/media", &b)
	if err != nil {
		return "", fmt.Errorf("whatsapp upload: %w", err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	var out struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, req, "POST /{phone-number-id}/media", &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// SendFile uploads f and sends it to the address to: a PNG or JPEG
// within 5 MB as an image, anything else as a document, the caption with
// it.
func (c *Client) SendFile(ctx context.Context, to string, f channel.File) (string, error) {
	id, err := c.UploadMedia(ctx, f)
	if err != nil {
		return "", err
	}
	body := &mediaBody{ID: id, Caption: channel.Cut(f.Caption, 1024)}
	m := message{To: to, Type: "document", Document: body}
	if (f.MediaType == "image/jpeg" || f.MediaType == "image/png") && len(f.Data) <= maxImage {
		m = message{To: to, Type: "image", Image: body}
	} else {
		body.Filename = f.Name
	}
	return c.post(ctx, m)
}

// SendFile sends f (Client.SendFile) within the customer service window;
// outside it the template goes instead, as Send does.
func (p *Platform) SendFile(ctx context.Context, to string, f channel.File) (string, error) {
	return p.withinWindow(ctx, to, func() (string, error) { return p.client.SendFile(ctx, to, f) })
}

// attachments are the media of m (an image, a document, an audio clip or
// voice note), fetched with the client.
func (h *webhook) attachments(m waMessage) []channel.Attachment {
	var kind channel.AttachmentKind
	var body *mediaBody
	switch m.Type {
	case "image":
		kind, body = channel.AttachImage, m.Image
	case "document":
		kind, body = channel.AttachFile, m.Document
	case "audio":
		kind, body = channel.AttachVoice, m.Audio
	}
	if body == nil || body.ID == "" {
		return nil
	}
	id := body.ID
	name := body.Filename
	if kind == channel.AttachVoice {
		name = cmp.Or(name, "voice."+strings.TrimPrefix(strings.SplitN(body.MimeType, ";", 2)[0], "audio/"))
	}
	return []channel.Attachment{{Kind: kind, Name: name, MediaType: strings.TrimSpace(strings.SplitN(body.MimeType, ";", 2)[0]),
		Fetch: func(ctx context.Context, max int64) ([]byte, error) { return h.p.client.Media(ctx, id, max) }}}
}
