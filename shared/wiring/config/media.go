package config

import (
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// Transcription is the speech-to-text endpoint that voice notes sent to
// the messaging channels go to before the agent sees them: an
// OpenAI-compatible /audio/transcriptions (OpenAI's whisper-1, a local
// whisper server). Provider takes base_url and api_key from a configured
// openai provider; base_url and api_key set here take precedence.
type Transcription struct {
	Provider string   `yaml:"provider"`
	BaseURL  string   `yaml:"base_url"`
	APIKey   Secret   `yaml:"api_key"`
	Model    string   `yaml:"model"`
	Timeout  Duration `yaml:"timeout"`
}

// DefaultTranscriptionModel is the model of a transcription section that
// names none.
const DefaultTranscriptionModel = "whisper-1"

// validate checks t against the providers and fills in what the provider
// it names gives.
func (t *Transcription) validate(providers []Provider) error {
	if t == nil {
		return nil
	}
	if t.Timeout < 0 {
		return fmt.Errorf("config: transcription.timeout must not be negative")
	}
	if t.Provider != "" {
		i := -1
		for k := range providers {
			if providers[k].Name == t.Provider {
				i = k
			}
		}
		switch {
		case i < 0:
			return fmt.Errorf("config: transcription.provider %q is not a configured provider", t.Provider)
		case providers[i].Type != ProviderOpenAI:
			return fmt.Errorf("config: transcription.provider %q is %s; transcription needs an OpenAI-compatible provider", t.Provider, providers[i].Type)
		}
		if t.BaseURL == "" {
			t.BaseURL = providers[i].BaseURL
		}
		if !t.APIKey.Set() {
			t.APIKey = providers[i].APIKey
		}
	}
	if t.Model == "" {
		t.Model = DefaultTranscriptionModel
	}
	return nil
}

// MediaLimits bound the images, audio and files of one message, on the
// API and the messaging channels. Zero fields are the defaults
// (chat.DefaultLimits: 20 MB a file, 50 MB a message, 20 files), which a
// 1 GB machine holds a few of at once.
type MediaLimits struct {
	MaxImageBytes   int `yaml:"max_image_bytes"`
	MaxAudioBytes   int `yaml:"max_audio_bytes"`
	MaxFileBytes    int `yaml:"max_file_bytes"`
	MaxMessageBytes int `yaml:"max_message_bytes"`
	MaxFiles        int `yaml:"max_files"`
}

// Chat returns the limits as chat.Limits.
func (m MediaLimits) Chat() chat.Limits {
	return chat.Limits{MaxImageBytes: m.MaxImageBytes, MaxAudioBytes: m.MaxAudioBytes, MaxFileBytes: m.MaxFileBytes,
		MaxMessageBytes: m.MaxMessageBytes, MaxParts: m.MaxFiles}
}

func (m MediaLimits) check() error {
	if m.MaxImageBytes < 0 || m.MaxAudioBytes < 0 || m.MaxFileBytes < 0 || m.MaxMessageBytes < 0 || m.MaxFiles < 0 {
		return fmt.Errorf("config: limits.media must not be negative")
	}
	return nil
}
