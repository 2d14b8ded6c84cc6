package tests

// The scenarios of openai-go, the official Go client, for TestClients:
// like the JavaScript ones, each returns what the client saw, and the
// requests it sent are recorded (by a middleware) for checkForwarded.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// goScenarios are the openai-go scenarios by name; tag starts every prompt.
var goScenarios = map[string]func(ctx context.Context, c *openai.Client, tag string) (any, error){
	// image asks about a picture sent as a data: URL (issue 28).
	"image": func(ctx context.Context, c *openai.Client, tag string) (any, error) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "default",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart(tag + " what is in this picture?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: pngDataURL, Detail: "low"}),
			})},
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"content": r.Choices[0].Message.Content}, nil
	},
	// tools gets a call of a client tool and answers it (stateless: the
	// second request carries the whole conversation).
	"tools": func(ctx context.Context, c *openai.Client, tag string) (any, error) {
		params := openai.ChatCompletionNewParams{
			Model:    "default",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tag + ` What is the weather? get_weather {"city": "Paris"}`)},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name:        "get_weather",
				Description: openai.String("The current weather of a city"),
				Parameters: shared.FunctionParameters{
					"type":       "object",
					"properties": map[string]any{"city": map[string]any{"type": "string", "description": "The name of the city"}},
					"required":   []string{"city"},
				},
			})},
		}
		first, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			return nil, err
		}
		msg := first.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return nil, fmt.Errorf("no tool call; finish_reason %q, content %q", first.Choices[0].FinishReason, msg.Content)
		}
		call := msg.ToolCalls[0]
		var args struct{ City string }
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
			return nil, fmt.Errorf("arguments %q: %w", call.Function.Arguments, err)
		}
		params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("sunny and 21°C in "+args.City, call.ID))
		final, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			return nil, err
		}
		return map[string]any{
			"finish_reason": first.Choices[0].FinishReason,
			"call":          toolCallResult{Name: call.Function.Name, Arguments: map[string]any{"city": args.City}},
			"content":       final.Choices[0].Message.Content,
		}, nil
	},
	// responses is a Responses API call, then a streamed one.
	"responses": func(ctx context.Context, c *openai.Client, tag string) (any, error) {
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: "default",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(tag + " hello")},
		})
		if err != nil {
			return nil, err
		}
		stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "default",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(tag + " stream this answer")},
		})
		var types []string
		text := ""
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" {
				text += ev.Delta
			}
		}
		if err := stream.Err(); err != nil {
			return nil, err
		}
		return map[string]any{"output_text": r.OutputText(), "status": r.Status, "streamed": text, "types": types}, nil
	},
	// embeddings asks for the vectors of two texts.
	"embeddings": func(ctx context.Context, c *openai.Client, tag string) (any, error) {
		r, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:          "default",
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{tag + " first text", "second text"}},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		})
		if err != nil {
			return nil, err
		}
		var lengths []int
		for _, d := range r.Data {
			lengths = append(lengths, len(d.Embedding))
		}
		return map[string]any{"lengths": lengths, "prompt_tokens": r.Usage.PromptTokens}, nil
	},
}

// runGoClients runs openai-go scenarios against the gateway, one after the
// other, and returns their results by id ("openai-go/name").
func runGoClients(t *testing.T, g *gateway, key string, ids []string) map[string]clientResult {
	t.Helper()
	results := map[string]clientResult{}
	for _, id := range ids {
		var sent []clientRequest
		c := g.client(key, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			var body []byte
			if req.Body != nil {
				b, err := io.ReadAll(req.Body)
				if err != nil {
					return nil, err
				}
				body = b
				req.Body = io.NopCloser(bytes.NewReader(b))
			}
			sent = append(sent, clientRequest{Method: req.Method, Path: req.URL.Path, Body: body})
			resp, err := next(req)
			if resp != nil {
				sent[len(sent)-1].Status = resp.StatusCode
			}
			return resp, err
		}))
		res := clientResult{Scenario: id}
		_, name, _ := strings.Cut(id, "/")
		scenario, ok := goScenarios[name]
		if !ok {
			t.Fatalf("no openai-go scenario %s", name)
		}
		out, err := scenario(context.Background(), c, "["+id+"]")
		if err != nil {
			res.Error = err.Error()
		} else {
			res.OK = true
			res.Result, _ = json.Marshal(out)
		}
		res.Sent = sent
		results[id] = res
	}
	return results
}
