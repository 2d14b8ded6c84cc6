package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/openai"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

func TestTranscribe(t *testing.T) {
	fake := fakellm.New()
	defer fake.Close()
	fake.SetTranscript(func(audio []byte) string { return "heard " + string(audio) })
	tr, err := openai.NewTranscriber(openai.TranscribeConfig{BaseURL: fake.URL + "/v1", APIKey: "sk-test", Model: "whisper-1"})
	if err != nil {
		t.Fatal(err)
	}
	text, err := tr.Transcribe(t.Context(), []byte("OggS call mum"), "audio/ogg", "")
	if err != nil || text != "heard OggS call mum" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	want := []fakellm.Transcription{{Model: "whisper-1", Filename: "audio.ogg", ContentType: "audio/ogg", APIKey: "sk-test", Audio: []byte("OggS call mum")}}
	if d := cmp.Diff(want, fake.Transcriptions()); d != "" {
		t.Fatalf("requests (-want +got):\n%s", d)
	}
	// An error status is an *llm.Error that holds no key.
	big := make([]byte, 26<<20)
	_, err = tr.Transcribe(t.Context(), big, "audio/ogg", "big.ogg")
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 413 || strings.Contains(err.Error(), "sk-test") {
		t.Fatalf("a 26 MB file: %v", err)
	}
	if _, err := openai.NewTranscriber(openai.TranscribeConfig{}); err == nil {
		t.Fatal("a transcriber without a model was made")
	}
}
