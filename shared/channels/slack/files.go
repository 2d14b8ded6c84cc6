package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// file is a file shared in a message (the subtype file_share).
type file struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	URLPrivateDownload string `json:"url_private_download"`
}

// attachments are a message's files, fetched with p.Download; none
// without it.
func (p Parser) attachments(files []file) []channel.Attachment {
	if p.Download == nil {
		return nil
	}
	var out []channel.Attachment
	for _, f := range files {
		kind := channel.AttachFile
		switch {
		case strings.HasPrefix(f.Mimetype, "image/"):
			kind = channel.AttachImage
		case strings.HasPrefix(f.Mimetype, "audio/"):
			kind = channel.AttachVoice
		}
		u := f.URLPrivateDownload
		out = append(out, channel.Attachment{Kind: kind, Name: f.Name, MediaType: f.Mimetype, Size: f.Size,
			Fetch: func(ctx context.Context, max int64) ([]byte, error) { return p.Download(ctx, u, max) }})
	}
	return out
}

// Download returns a shared file's bytes from its url_private_download,
// with the bot token (which needs files:read), refusing a file larger
// than max (channel.ErrTooLarge). The token goes only to Slack's file
// host (files.slack.com) or the API's own.
func (c *Client) Download(ctx context.Context, fileURL string, max int64) ([]byte, error) {
	u, err := url.Parse(fileURL)
	api, _ := url.Parse(c.base)
	slackFiles := err == nil && u.Scheme == "https" && u.Host == "files.slack.com"
	ownHost := err == nil && u.Scheme == api.Scheme && u.Host == api.Host
	if !slackFiles && !ownHost {
		return nil, &channel.Error{Platform: Name, Method: "download", Message: "not a Slack file URL", Permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fileURL, nil)
	if err != nil {
		return nil, fmt.Errorf("slack download: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack download: %s", scrub.Known(err.Error(), c.token))
	}
	defer resp.Body.Close()
	// Without files:read Slack answers its sign-in page, not the file.
	if resp.StatusCode != http.StatusOK || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		return nil, &channel.Error{Platform: Name, Method: "download", Status: resp.StatusCode,
			Message: "the file was not given (does the app have the files:read scope?)", Permanent: resp.StatusCode < 500}
	}
	data, err := channel.ReadAtMost(resp.Body, max)
	if err != nil && !errors.Is(err, channel.ErrTooLarge) {
		return nil, fmt.Errorf("slack download: %w", err)
	}
	return data, err
}

// SendFile uploads f to the conversation to, as Slack's files upload v2
// goes: files.getUploadURLExternal gives an upload URL, the bytes are
// posted to it, and files.completeUploadExternal shares the file in the
// channel (and thread) with the caption as its comment. It needs the
// files:write scope.
func (c *Client) SendFile(ctx context.Context, to string, f channel.File) (string, error) {
	a, err := ParseAddress(to)
	if err != nil {
		return "", err
	}
	var up struct {
		UploadURL string `json:"upload_url"`
		FileID    string `json:"file_id"`
	}
	if err := c.callForm(ctx, "files.getUploadURLExternal", url.Values{"filename": {f.Name}, "length": {strconv.Itoa(len(f.Data))}}, &up); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.UploadURL, bytes.NewReader(f.Data))
	if err != nil {
		return "", fmt.Errorf("slack upload: %w", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("slack upload: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &channel.Error{Platform: Name, Method: "upload", Status: resp.StatusCode, Message: resp.Status, Permanent: resp.StatusCode < 500}
	}
	files, _ := json.Marshal([]map[string]string{{"id": up.FileID, "title": f.Name}})
	form := url.Values{"files": {string(files)}, "channel_id": {a.Channel}}
	if a.Thread != "" {
		form.Set("thread_ts", a.Thread)
	}
	if f.Caption != "" {
		form.Set("initial_comment", f.Caption)
	}
	if err := c.callForm(ctx, "files.completeUploadExternal", form, nil); err != nil {
		return "", err
	}
	return up.FileID, nil
}
