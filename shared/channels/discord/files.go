package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// upload is a multipart body (a message with a file), which do sends as
// it is.
type upload struct {
	contentType string
	body        []byte
}

// attachments are m's files: images, voice messages (and other audio),
// documents, each fetched from Discord's CDN by download.
func attachments(m *Message, download func(ctx context.Context, url string, max int64) ([]byte, error)) []channel.Attachment {
	var out []channel.Attachment
	for _, a := range m.Attachments {
		kind := channel.AttachFile
		switch {
		case strings.HasPrefix(a.ContentType, "image/"):
			kind = channel.AttachImage
		case m.Flags&IsVoiceMessage != 0 || strings.HasPrefix(a.ContentType, "audio/"):
			kind = channel.AttachVoice
		}
		u := a.URL
		out = append(out, channel.Attachment{Kind: kind, Name: a.Filename, MediaType: a.ContentType, Size: a.Size,
			Fetch: func(ctx context.Context, max int64) ([]byte, error) { return download(ctx, u, max) }})
	}
	return out
}

// Download returns an attachment's bytes from its signed CDN URL
// (cdn.discordapp.com, media.discordapp.net, or the API's own host),
// refusing one larger than max (channel.ErrTooLarge). No token is sent:
// the URL is its own authorization.
func (c *Client) Download(ctx context.Context, fileURL string, max int64) ([]byte, error) {
	u, err := url.Parse(fileURL)
	api, _ := url.Parse(c.base)
	cdn := err == nil && u.Scheme == "https" && (u.Host == "cdn.discordapp.com" || u.Host == "media.discordapp.net")
	if !cdn && (err != nil || u.Scheme != api.Scheme || u.Host != api.Host) {
		return nil, &channel.Error{Platform: Name, Method: "download", Message: "not a Discord attachment URL", Permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fileURL, nil)
	if err != nil {
		return nil, fmt.Errorf("discord download: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// An expired signed URL answers 404.
		return nil, &channel.Error{Platform: Name, Method: "download", Status: resp.StatusCode, Message: resp.Status, Permanent: resp.StatusCode < 500}
	}
	data, err := channel.ReadAtMost(resp.Body, max)
	if err != nil && !errors.Is(err, channel.ErrTooLarge) {
		return nil, fmt.Errorf("discord download: %w", err)
	}
	return data, err
}

// SendFile posts f as a message with one attachment (multipart:
// payload_json and files[0]), the caption its content: as a follow-up of
// the interaction, or in the channel.
func (c *Client) SendFile(ctx context.Context, to string, f channel.File) (string, error) {
	a, err := parseAddress(to)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	payload, _ := json.Marshal(map[string]any{"content": channel.Cut(f.Caption, MaxLen), "allowed_mentions": allowedMentions{Parse: []string{}},
		"attachments": []map[string]any{{"id": 0, "filename": f.Name}}})
	err = w.WriteField("payload_json", string(payload))
	if err == nil {
		err = f.WritePart(w, "files[0]")
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return "", fmt.Errorf("discord: %w", err)
	}
	return c.post(ctx, a, upload{contentType: w.FormDataContentType(), body: b.Bytes()})
}
