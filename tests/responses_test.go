package tests

// The Responses API with openai-go against the real server: how
// responses map onto sessions (previous_response_id continues, branches,
// or runs stateless), what is stored and for whom, and the function call
// round trip.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// respText is a request to the default agent with text input, and more
// when given.
func respText(text string, edit ...func(*responses.ResponseNewParams)) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "default", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
	for _, e := range edit {
		e(&p)
	}
	return p
}

// respItems is a request to the default agent with input items.
func respItems(items []responses.ResponseInputItemUnionParam, edit ...func(*responses.ResponseNewParams)) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "default", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
	for _, e := range edit {
		e(&p)
	}
	return p
}

func after(id string) func(*responses.ResponseNewParams) {
	return func(p *responses.ResponseNewParams) { p.PreviousResponseID = openai.String(id) }
}

func notStored(p *responses.ResponseNewParams) { p.Store = openai.Bool(false) }

func withWeather(p *responses.ResponseNewParams) {
	p.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)}
}

// output is a function_call_output item.
func output(callID, text string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(text)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

// create sends a request that must succeed.
func create(t *testing.T, c *openai.Client, p responses.ResponseNewParams) *responses.Response {
	t.Helper()
	r, err := c.Responses.New(context.Background(), p)
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		t.Fatalf("responses.create: %v: %s", err, apiErr.RawJSON())
	}
	if err != nil {
		t.Fatalf("responses.create: %v", err)
	}
	return r
}

// lastConversation is the conversation of the model call n (from 0),
// without system messages.
func lastConversation(t *testing.T, fake *fakellm.Server, n int) []fakellm.Message {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("%d model calls, want %d", len(reqs), n+1)
	}
	return conversation(reqs[n].Messages)
}

func wantConversation(t *testing.T, fake *fakellm.Server, n int, want ...fakellm.Message) {
	t.Helper()
	if diff := cmp.Diff(want, lastConversation(t, fake, n)); diff != "" {
		t.Errorf("conversation of model call %d (-want +got):\n%s", n, diff)
	}
}

// systemText joins the system messages of model call n.
func systemText(fake *fakellm.Server, n int) string {
	var b strings.Builder
	for _, m := range fake.Requests()[n].Messages {
		if m.Role == "system" || m.Role == "developer" {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String()
}

// previous_response_id continues the previous response's session: the
// model sees the first exchange once. Instructions apply to their own
// response only, and each response counts its own usage.
func TestResponsesContinue(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	fake.Enqueue(
		fakellm.Reply{Content: "Hello Ada.", Usage: &fakellm.Usage{PromptTokens: 100, CompletionTokens: 5}},
		fakellm.Reply{Content: "You are Ada.", Usage: &fakellm.Usage{PromptTokens: 150, CompletionTokens: 4}},
	)
	first := create(t, c, respText("My name is Ada.", func(p *responses.ResponseNewParams) { p.Instructions = openai.String("Answer in riddles.") }))
	second := create(t, c, respText("What is my name?", after(first.ID)))
	if first.OutputText() != "Hello Ada." || second.OutputText() != "You are Ada." {
		t.Errorf("answers %q, %q", first.OutputText(), second.OutputText())
	}
	wantConversation(t, fake, 1, user("My name is Ada."), assistant("Hello Ada."), user("What is my name?"))
	if !strings.Contains(systemText(fake, 0), "Answer in riddles.") {
		t.Error("the first model call did not get the instructions")
	}
	if strings.Contains(systemText(fake, 1), "Answer in riddles.") {
		t.Error("the instructions of the first response reached the second")
	}
	if second.Instructions.OfString != "" || second.PreviousResponseID != first.ID {
		t.Errorf("second response: instructions %+v, previous_response_id %q", second.Instructions, second.PreviousResponseID)
	}
	for _, tt := range []struct {
		r            *responses.Response
		input, total int64
	}{{first, 100, 105}, {second, 150, 154}} {
		if u := tt.r.Usage; u.InputTokens != tt.input || u.TotalTokens != tt.total {
			t.Errorf("usage of %s = %d in, %d in all; want %d, %d", tt.r.ID, u.InputTokens, u.TotalTokens, tt.input, tt.total)
		}
	}
}

// previous_response_id of an earlier response branches: a new
// conversation with the history up to it; the first conversation goes on
// unchanged.
func TestResponsesBranch(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	one := create(t, c, respText("one"))
	two := create(t, c, respText("two", after(one.ID)))
	three := create(t, c, respText("three", after(one.ID)))
	wantConversation(t, fake, 2, user("one"), assistant("echo: one"), user("three"))
	create(t, c, respText("four", after(two.ID)))
	wantConversation(t, fake, 3, user("one"), assistant("echo: one"), user("two"), assistant("echo: two"), user("four"))
	create(t, c, respText("five", after(three.ID)))
	wantConversation(t, fake, 4, user("one"), assistant("echo: one"), user("three"), assistant("echo: three"), user("five"))
}

// store false runs stateless with the previous conversation as history,
// and is not kept: GET finds nothing, previous_response_id cannot name it
// (as OpenAI answers), the conversation it continued goes on without it,
// and neither the key's sessions nor its memories hold it (issue 26).
func TestResponsesNotStored(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	one := create(t, c, respText("one"))
	aside := create(t, c, respText("aside", after(one.ID), notStored))
	if !strings.Contains(aside.RawJSON(), `"store":false`) {
		t.Errorf("the response does not say store false: %s", aside.RawJSON())
	}
	wantConversation(t, fake, 1, user("one"), assistant("echo: one"), user("aside"))
	_, err := c.Responses.Get(context.Background(), aside.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "response_not_found")
	_, err = c.Responses.New(context.Background(), respText("more", after(aside.ID)))
	wantAPIError(t, err, http.StatusBadRequest, "previous_response_not_found")
	create(t, c, respText("two", after(one.ID)))
	wantConversation(t, fake, 2, user("one"), assistant("echo: one"), user("two"))

	// Nor is it in the key's history (the console's sessions) or memory:
	// the stored turns are, once the recorder took up the last one.
	key := g.firstKey()
	var found memory.Results
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(fmt.Sprint(found.Hits), "echo: two"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stored turn was never recorded: %+v", found)
		}
		found = memory.Results{}
		consoleGet(t, g, key, "/v1/lambdaclaw/agents/default/memory?q=two", &found)
	}
	found = memory.Results{}
	consoleGet(t, g, key, "/v1/lambdaclaw/agents/default/memory?q=aside", &found)
	if strings.Contains(fmt.Sprint(found.Hits), "aside") {
		t.Errorf("memory holds the response not stored: %+v", found.Hits)
	}
	var list struct{ Sessions []struct{ ID string } }
	consoleGet(t, g, key, "/v1/lambdaclaw/sessions", &list)
	for _, s := range list.Sessions {
		var session any
		consoleGet(t, g, key, "/v1/lambdaclaw/sessions/"+s.ID, &session)
		if strings.Contains(fmt.Sprint(session), "aside") {
			t.Errorf("session %s holds the response not stored: %v", s.ID, session)
		}
	}
	if len(list.Sessions) != 1 {
		t.Errorf("sessions = %+v, want the one of the stored responses", list.Sessions)
	}
}

// consoleGet GETs path of the console's API as key into v.
func consoleGet(t *testing.T, g *gateway, key, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// GET returns a stored response with its output, also after a restart;
// after DELETE it is gone, everywhere.
func TestResponsesStored(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	ctx := context.Background()
	fake.Enqueue(fakellm.Reply{Content: "Stored answer.", Usage: &fakellm.Usage{PromptTokens: 40, CompletionTokens: 3}})
	r := create(t, c, respText("keep this", func(p *responses.ResponseNewParams) { p.Metadata = map[string]string{"topic": "test"} }))
	got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Status != "completed" || got.OutputText() != "Stored answer." || got.Usage.InputTokens != 40 || got.Metadata["topic"] != "test" {
		t.Errorf("GET = %s", got.RawJSON())
	}
	g.stop()
	g.start()
	again, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if again.RawJSON() != got.RawJSON() {
		t.Errorf("GET after a restart:\n%s\nbefore:\n%s", again.RawJSON(), got.RawJSON())
	}

	if err := c.Responses.Delete(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "response_not_found")
	wantAPIError(t, c.Responses.Delete(ctx, r.ID), http.StatusNotFound, "response_not_found")
	_, err = c.Responses.New(ctx, respText("more", after(r.ID)))
	wantAPIError(t, err, http.StatusBadRequest, "previous_response_not_found")
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}

// Another key's requests find none of the first key's responses, and
// change nothing.
func TestResponsesOwnership(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	other := g.client(g.createKey(t, "--name", "other", "--autonomy", "full"))
	ctx := context.Background()
	mine := create(t, c, respText("secret plan"))

	_, err := other.Responses.Get(ctx, mine.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "response_not_found")
	wantAPIError(t, other.Responses.Delete(ctx, mine.ID), http.StatusNotFound, "response_not_found")
	_, err = other.Responses.New(ctx, respText("what was the plan?", after(mine.ID)))
	wantAPIError(t, err, http.StatusBadRequest, "previous_response_not_found")
	msgID := mine.Output[0].ID
	_, err = other.Responses.New(ctx, respItems([]responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfItemReference(msgID)}))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1: the other key's requests reached the model", n)
	}

	// The owner's response is intact, and its conversation goes on
	// where it was.
	if got, err := c.Responses.Get(ctx, mine.ID, responses.ResponseGetParams{}); err != nil || got.OutputText() != "echo: secret plan" {
		t.Fatalf("the owner's GET: %v", err)
	}
	create(t, c, respItems([]responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfItemReference(msgID),
		responses.ResponseInputItemParamOfMessage("go on", responses.EasyInputMessageRoleUser),
	}, notStored))
	wantConversation(t, fake, 1, assistant("echo: secret plan"), user("go on"))
	create(t, c, respText("and then?", after(mine.ID)))
	wantConversation(t, fake, 2, user("secret plan"), assistant("echo: secret plan"), user("and then?"))
}

// A function call round trip: the response ends with the call; the
// function_call_output items, with previous_response_id, start the next
// response, which must answer exactly the open call. A new message
// instead closes the call as not run.
func TestResponsesFunctionCalls(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	ctx := context.Background()
	weatherCall := func(id, city string) fakellm.ToolCall {
		return fakellm.ToolCall{ID: id, Name: "get_weather", Arguments: `{"city":"` + city + `"}`}
	}
	fake.Enqueue(
		fakellm.Reply{Content: "Let me check.", ToolCalls: []fakellm.ToolCall{weatherCall("call_oslo", "Oslo")}, Usage: &fakellm.Usage{PromptTokens: 100, CompletionTokens: 10}},
		fakellm.Reply{Content: "Rain in Oslo.", Usage: &fakellm.Usage{PromptTokens: 130, CompletionTokens: 4}},
	)
	first := create(t, c, respText("weather in Oslo?", withWeather))
	if len(first.Output) != 2 || first.Output[1].Type != "function_call" {
		t.Fatalf("output = %s, want the message and the call", first.RawJSON())
	}
	call := first.Output[1].AsFunctionCall()
	if call.CallID != "call_oslo" || call.Name != "get_weather" || call.Arguments != `{"city":"Oslo"}` || first.Status != "completed" {
		t.Errorf("call = %+v, status %s", call, first.Status)
	}
	// The stored response keeps its call.
	if got, err := c.Responses.Get(ctx, first.ID, responses.ResponseGetParams{}); err != nil || got.RawJSON() != first.RawJSON() {
		t.Errorf("GET = %v %v\nwant %s", got.RawJSON(), err, first.RawJSON())
	}

	// An output for another call is refused, and changes nothing.
	_, err := c.Responses.New(ctx, respItems([]responses.ResponseInputItemUnionParam{output("call_nope", "sunny")}, after(first.ID), withWeather))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("%d model calls after a refused output, want 1", n)
	}

	second := create(t, c, respItems([]responses.ResponseInputItemUnionParam{output(call.CallID, "rain, 4°C")}, after(first.ID), withWeather))
	if second.OutputText() != "Rain in Oslo." {
		t.Errorf("answer = %q", second.OutputText())
	}
	opened := fakellm.Message{Role: "assistant", Content: "Let me check.", ToolCalls: []fakellm.ToolCall{weatherCall("call_oslo", "Oslo")}}
	wantConversation(t, fake, 1, user("weather in Oslo?"), opened, fakellm.Message{Role: "tool", Content: "rain, 4°C", ToolCallID: "call_oslo"})
	if first.Usage.InputTokens != 100 || first.Usage.OutputTokens != 10 || second.Usage.InputTokens != 130 || second.Usage.OutputTokens != 4 {
		t.Errorf("usage %+v then %+v, want each response's own", first.Usage, second.Usage)
	}

	// A new message instead of the output: the call is answered as not
	// run, and the model gets a valid conversation (newFake checks).
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{weatherCall("call_bergen", "Bergen")}})
	third := create(t, c, respText("and in Bergen?", after(second.ID), withWeather))
	if len(third.Output) != 1 || third.Output[0].AsFunctionCall().CallID != "call_bergen" {
		t.Fatalf("output = %s, want only the call", third.RawJSON())
	}
	create(t, c, respText("never mind", after(third.ID)))
	conv := lastConversation(t, fake, 3)
	if got, _ := toolResult(fake.Requests()[3], "call_bergen"); !strings.Contains(got, "did not run") {
		t.Errorf("the open call's result upstream = %q", got)
	}
	if last := conv[len(conv)-1]; !cmp.Equal(last, user("never mind")) {
		t.Errorf("last message upstream = %+v", last)
	}

	// The same round trip, stateless: store false, the conversation
	// given by the previous response.
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{weatherCall("call_rome", "Rome")}},
		fakellm.Reply{Content: "Sun in Rome."},
	)
	fourth := create(t, c, respText("and in Rome?", notStored, withWeather))
	_, err = c.Responses.New(ctx, respItems([]responses.ResponseInputItemUnionParam{output("call_oslo", "sunny")}, after(third.ID), notStored, withWeather))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")
	_, err = c.Responses.Get(ctx, fourth.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound, "response_not_found")
	items := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("and in Rome?", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(`{"city":"Rome"}`, "call_rome", "get_weather"),
		output("call_rome", "sun, 25°C"),
	}
	if fifth := create(t, c, respItems(items, notStored, withWeather)); fifth.OutputText() != "Sun in Rome." {
		t.Errorf("answer = %q", fifth.OutputText())
	}
	wantConversation(t, fake, 5, user("and in Rome?"),
		fakellm.Message{Role: "assistant", ToolCalls: []fakellm.ToolCall{weatherCall("call_rome", "Rome")}},
		fakellm.Message{Role: "tool", Content: "sun, 25°C", ToolCallID: "call_rome"})
}
