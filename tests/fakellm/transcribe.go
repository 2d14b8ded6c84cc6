package fakellm

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Transcription is one /v1/audio/transcriptions request, as OpenAI takes
// it: a multipart form with the audio file and the model.
type Transcription struct {
	Model, Filename, ContentType, APIKey string
	Audio                                []byte
}

// maxAudio is OpenAI's limit of an audio file to transcribe.
const maxAudio = 25 << 20

type transcriptions struct {
	mu       sync.Mutex
	requests []Transcription
	text     func([]byte) string
}

func (s *Server) transcriptions() *transcriptions { return &s.trans }

// SetTranscript sets what the fake hears in audio; by default it hears
// the audio's bytes as text.
func (s *Server) SetTranscript(f func(audio []byte) string) {
	t := s.transcriptions()
	t.mu.Lock()
	t.text = f
	t.mu.Unlock()
}

// Transcriptions returns the transcription requests, in arrival order.
func (s *Server) Transcriptions() []Transcription {
	t := s.transcriptions()
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Transcription(nil), t.requests...)
}

// handleTranscriptions answers a transcription request with {"text"},
// refusing as OpenAI does a request that is not a multipart form, lacks
// the file or the model, or has more than 25 MB of audio.
func (s *Server) handleTranscriptions(w http.ResponseWriter, r *http.Request) {
	invalid := func(msg string) {
		writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: msg, ErrorType: "invalid_request_error"})
	}
	if err := r.ParseMultipartForm(maxAudio + 1<<20); err != nil {
		invalid("Could not parse multipart form")
		return
	}
	f, h, err := r.FormFile("file")
	if err != nil {
		invalid("you must provide a file")
		return
	}
	defer f.Close()
	audio, err := io.ReadAll(io.LimitReader(f, maxAudio+1))
	switch {
	case err != nil:
		invalid("Could not read the file")
		return
	case len(audio) > maxAudio:
		writeError(w, Reply{Status: http.StatusRequestEntityTooLarge, ErrorMessage: "Maximum content size limit (26214400) exceeded", ErrorType: "invalid_request_error"})
		return
	case r.FormValue("model") == "":
		invalid("you must provide a model parameter")
		return
	}
	t := s.transcriptions()
	t.mu.Lock()
	t.requests = append(t.requests, Transcription{Model: r.FormValue("model"), Filename: h.Filename, ContentType: h.Header.Get("Content-Type"),
		APIKey: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), Audio: audio})
	hear := t.text
	t.mu.Unlock()
	text := string(audio)
	if hear != nil {
		text = hear(audio)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"text": text})
}
