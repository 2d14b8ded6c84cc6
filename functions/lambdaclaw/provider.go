package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/config"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/openai"
)

// newProvider builds the adapter for a configured provider: an
// OpenAI-compatible endpoint, or Bedrock Converse signed with the IAM
// credentials of the environment (the Lambda role on AWS). Its replies are
// cut at maxReply bytes (limits.max_reply_bytes).
func newProvider(p config.Provider, maxReply int) (llm.Provider, error) {
	switch p.Type {
	case config.ProviderBedrock:
		return bedrock.NewConverse(context.Background(), bedrock.ConverseConfig{
			Name: p.Name, Region: p.Region, Model: p.Model, Timeout: time.Duration(p.Timeout), Endpoint: p.BaseURL,
			MaxReplyBytes: maxReply,
		})
	case config.ProviderOpenAI, "":
		return openai.New(openai.Config{
			Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Model: p.Model, Timeout: time.Duration(p.Timeout),
			MaxReplyBytes: maxReply,
		})
	}
	return nil, fmt.Errorf("unknown provider type %q", p.Type)
}
