package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// DefaultTranscribeTimeout bounds one transcription request.
const DefaultTranscribeTimeout = 120 * time.Second

// maxTranscript bounds the answer to a transcription request.
const maxTranscript = 1 << 20

// TranscribeConfig describes one OpenAI-compatible
// /audio/transcriptions endpoint (OpenAI's whisper-1 and
// gpt-4o-transcribe, a local whisper.cpp or faster-whisper server).
type TranscribeConfig struct {
	// Name identifies the endpoint in errors; "openai" when empty.
	Name string
	// BaseURL is the API root; empty means https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token; servers of one's own may need none.
	APIKey string
	// Model is the speech-to-text model, such as whisper-1. Required.
	Model string
	// Timeout bounds each request; DefaultTranscribeTimeout when zero.
	Timeout time.Duration
	// HTTPClient sends the requests, following redirects within the base
	// URL's origin only; a client over http.DefaultTransport when nil.
	HTTPClient *http.Client
}

// Transcriber turns speech into text with an OpenAI-compatible
// transcriptions endpoint (channel.Transcriber). Its failures are
// *llm.Error, classified as the chat Provider's, never holding the key.
type Transcriber struct {
	model string
	api   *client
	errs  *Provider
}

// NewTranscriber returns a Transcriber for cfg.
func NewTranscriber(cfg TranscribeConfig) (*Transcriber, error) {
	name := cmp.Or(cfg.Name, "openai")
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai transcriber %s: model is required", name)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("openai transcriber %s: negative timeout %s", name, cfg.Timeout)
	}
	api, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("openai transcriber %s: %w", name, err)
	}
	timeout := cmp.Or(cfg.Timeout, DefaultTranscribeTimeout)
	return &Transcriber{model: cfg.Model, api: api, errs: &Provider{name: name, apiKey: cfg.APIKey, timeout: timeout, now: time.Now}}, nil
}

// Transcribe returns the text spoken in audio, of mediaType (audio/ogg,
// audio/mpeg, …), sent as a multipart form: the file (named name, or
// after its type) and the model.
func (t *Transcriber) Transcribe(ctx context.Context, audio []byte, mediaType, name string) (string, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", multipart.FileContentDisposition("file", cmp.Or(name, "audio"+audioExt(mediaType))))
	h.Set("Content-Type", cmp.Or(mediaType, "application/octet-stream"))
	fw, err := w.CreatePart(h)
	if err == nil {
		_, err = fw.Write(audio)
	}
	for _, f := range [][2]string{{"model", t.model}, {"response_format", "json"}} {
		if err == nil {
			err = w.WriteField(f[0], f[1])
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return "", &llm.Error{Provider: t.errs.name, Err: fmt.Errorf("encode request: %w", err)}
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, t.errs.timeout, errTimedOut)
	defer cancel()
	res, err := t.api.send(callCtx, "audio/transcriptions", w.FormDataContentType(), body.Bytes())
	if err != nil {
		return "", t.errs.classify(ctx, callCtx, res, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxTranscript+1))
	if err != nil {
		return "", t.errs.classify(ctx, callCtx, res, err)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if len(raw) > maxTranscript || json.Unmarshal(raw, &out) != nil || out.Text == nil {
		return "", &llm.Error{Provider: t.errs.name, Status: res.StatusCode, Err: fmt.Errorf("invalid response from server: want a JSON object with text")}
	}
	return *out.Text, nil
}

// audioExt is the file extension of an audio type, which servers read
// the format from.
func audioExt(mediaType string) string {
	switch strings.TrimPrefix(mediaType, "audio/") {
	case "ogg", "opus":
		return ".ogg"
	case "mpeg", "mp3":
		return ".mp3"
	case "mp4", "m4a", "x-m4a":
		return ".m4a"
	case "wav", "x-wav":
		return ".wav"
	case "webm":
		return ".webm"
	}
	return ""
}
