package main

import (
	"path/filepath"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/config"
	"github.com/lambdaclaw/lambdaclaw/shared/openai"
)

func TestNewProvider(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	p, err := newProvider(config.Provider{Name: "claude", Type: config.ProviderBedrock, Region: "us-east-1", Model: "anthropic.claude-x-v1:0"}, 1<<20)
	if _, ok := p.(*bedrock.Converse); err != nil || !ok || p.Name() != "claude" {
		t.Errorf("bedrock: newProvider = %T %v, want a *bedrock.Converse named claude", p, err)
	}
	p, err = newProvider(config.Provider{Name: "local", Type: config.ProviderOpenAI, BaseURL: "http://localhost:11434/v1", Model: "llama3.2"}, 1<<20)
	if _, ok := p.(*openai.Provider); err != nil || !ok || p.Name() != "local" {
		t.Errorf("openai: newProvider = %T %v, want an *openai.Provider named local", p, err)
	}
	if _, err := newProvider(config.Provider{Name: "x", Type: "nope", Model: "m"}, 1<<20); err == nil {
		t.Error("unknown type: newProvider succeeded")
	}
	for _, typ := range []string{config.ProviderOpenAI, config.ProviderBedrock} {
		if _, err := newProvider(config.Provider{Name: "x", Type: typ, Region: "us-east-1", Model: "m"}, -1); err == nil {
			t.Errorf("%s: a negative reply limit was accepted", typ)
		}
	}
}
