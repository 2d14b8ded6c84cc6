package config_test

import (
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestTranscriptionAndMediaLimits(t *testing.T) {
	dir, path := writeConfig(t, "providers:\n  - name: oa\n    base_url: http://127.0.0.1:9/v1\n    api_key: {env: OA_KEY}\n"+
		"transcription:\n  provider: oa\nlimits:\n  media: {max_image_bytes: 1048576, max_files: 3}\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir, "OA_KEY": "sk-oa"}))
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Transcription
	if tr.BaseURL != "http://127.0.0.1:9/v1" || tr.APIKey.Value() != "sk-oa" || tr.Model != config.DefaultTranscriptionModel {
		t.Errorf("transcription = %+v, want the provider's URL and key and the default model", tr)
	}
	if got := c.Limits.Media.Chat(); got != (chat.Limits{MaxImageBytes: 1 << 20, MaxParts: 3}) {
		t.Errorf("media limits = %+v", got)
	}
	for _, tc := range []struct{ body, want string }{
		{"transcription:\n  provider: nope\n", `transcription.provider "nope" is not a configured provider`},
		{"providers:\n  - {name: b, type: bedrock, region: us-east-1, model: m}\ntranscription:\n  provider: b\n", "needs an OpenAI-compatible provider"},
		{"limits:\n  media: {max_file_bytes: -1}\n", "limits.media must not be negative"},
	} {
		dir, path := writeConfig(t, tc.body)
		if _, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir})); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
	}
}
