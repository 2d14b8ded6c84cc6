package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
)

// responseStream writes a response as the Responses API streams it:
// server-sent events, each named by its type and numbered.
type responseStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	seq     int
	o       *responseObject
	// open is set once the message (output item 0) was announced.
	open bool
}

// event writes one event: payload's fields with its type and number.
func (s *responseStream) event(typ string, payload map[string]any) {
	payload["type"] = typ
	payload["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(payload)
	s.w.Write([]byte("event: " + typ + "\ndata: "))
	s.w.Write(b)
	s.w.Write([]byte("\n\n"))
}

func (s *responseStream) flush() {
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

// openMessage announces the message and its text part, once.
func (s *responseStream) openMessage() {
	if s.open {
		return
	}
	s.open = true
	s.event("response.output_item.added", map[string]any{"output_index": 0, "item": newMessageItem(s.o.ID, "in_progress")})
	s.event("response.content_part.added", map[string]any{"item_id": messageItemID(s.o.ID), "output_index": 0, "content_index": 0, "part": newOutputText("")})
}

// delta streams a piece of the message, opening it first.
func (s *responseStream) delta(text string) {
	s.openMessage()
	s.event("response.output_text.delta", map[string]any{"item_id": messageItemID(s.o.ID), "output_index": 0, "content_index": 0, "delta": text, "logprobs": []any{}})
}

// end streams the rest of the result and the finished response. Every
// item of the response's output is announced, streamed and done before
// it: the message first, when there is one or it was streamed already,
// then the calls.
func (s *responseStream) end(res *agent.Result) {
	if res.ErrorCode == "" {
		if !s.open && hasMessage(res) {
			// The answer was made before this request listened, or by a
			// run that streams nothing (the state machine's), or is empty.
			s.openMessage()
			if res.Content != "" {
				s.delta(res.Content)
			}
		}
		s.o.finish(res, s.open)
		out := 0
		if s.open {
			id := messageItemID(s.o.ID)
			part := newOutputText(res.Content)
			s.event("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": res.Content, "logprobs": []any{}})
			s.event("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "part": part})
			s.event("response.output_item.done", map[string]any{"output_index": 0, "item": s.o.Output[0]})
			out = 1
		}
		for i, c := range res.ToolCalls {
			item := newCallItem(s.o.ID, i, c, "in_progress")
			s.event("response.output_item.added", map[string]any{"output_index": out, "item": item})
			s.event("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": out, "delta": c.Arguments})
			s.event("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": out, "name": c.Name, "arguments": c.Arguments})
			s.event("response.output_item.done", map[string]any{"output_index": out, "item": newCallItem(s.o.ID, i, c, "completed")})
			out++
		}
	} else {
		s.o.finish(res, false)
	}
	switch s.o.Status {
	case "failed":
		s.event("response.failed", map[string]any{"response": s.o})
	case "incomplete":
		s.event("response.incomplete", map[string]any{"response": s.o})
	default:
		s.event("response.completed", map[string]any{"response": s.o})
	}
	s.flush()
}

// streamResponse streams the response o as its run tells it. The stream
// starts at once, as OpenAI's does: a run that fails ends it with
// response.failed.
func (g *Gateway) streamResponse(w http.ResponseWriter, r *http.Request, sub *agent.Subscription, o responseObject) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	s := &responseStream{w: w, flusher: flusher, o: &o}
	s.event("response.created", map[string]any{"response": o})
	s.event("response.in_progress", map[string]any{"response": o})
	s.flush()
	for {
		ev, err := g.nextOrIdle(r, sub, func() {
			w.Write([]byte(keepAlive))
			s.flush()
		})
		if err != nil {
			return // the client went away; the run goes on and is kept
		}
		switch {
		case ev.Approval != nil:
			s.end(&agent.Result{Content: ev.Approval.Prompt, FinishReason: "stop"})
			return
		case ev.Result != nil:
			res := *ev.Result // shared with the run's other subscribers
			if res.ErrorCode != "" {
				_, msg := g.runFailure(r, ev.RunID, &res)
				res.Error = withRequestID(msg, requestID(r.Context()))
			}
			s.end(&res)
			return
		case ev.Delta != "":
			s.delta(ev.Delta)
			s.flush()
		}
	}
}
