package turns_test

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/search"
)

// The memory vectors' default length is the embedding model's, which
// package search, apart from the Bedrock SDK, states again.
func TestDefaultDimensions(t *testing.T) {
	if search.DefaultDimensions != bedrock.DefaultEmbedDimensions {
		t.Errorf("search.DefaultDimensions = %d, want bedrock.DefaultEmbedDimensions, %d", search.DefaultDimensions, bedrock.DefaultEmbedDimensions)
	}
}
