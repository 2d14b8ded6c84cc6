package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
)

// nextOrIdle returns the run's next event; while none comes it calls idle
// every KeepAlive.
func (g *Gateway) nextOrIdle(r *http.Request, sub *agent.Subscription, idle func()) (agent.Event, error) {
	for {
		ctx, cancel := context.WithTimeout(r.Context(), g.cfg.KeepAlive)
		ev, err := sub.Next(ctx)
		cancel()
		if err == nil || r.Context().Err() != nil {
			return ev, err
		}
		idle()
	}
}

// keepAlive is the SSE comment that keeps a silent stream open.
const keepAlive = ": keep-alive\n\n"

// stream answers with server-sent events in OpenAI's chunk format. The
// status is decided by the first event: a run that fails before any content
// gets a plain JSON error with the right status; a failure after content
// started is sent as an error event.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, sub *agent.Subscription, id string, created int64, model string, includeUsage bool) {
	flusher, _ := w.(http.Flusher)
	started, streamed := false, false
	chunk := func(c completion) {
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", created, model
		b, _ := json.Marshal(c)
		w.Write([]byte("data: "))
		w.Write(b)
		w.Write([]byte("\n\n"))
	}
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		chunk(completion{Choices: []choice{{Delta: &delta{Role: "assistant"}}}})
	}
	idle := func() {
		// The status is decided now: a run that fails later is told
		// in the stream.
		start()
		w.Write([]byte(keepAlive))
		if flusher != nil {
			flusher.Flush()
		}
	}
	for {
		ev, err := g.nextOrIdle(r, sub, idle)
		if err != nil {
			return
		}
		if ev.Approval != nil {
			// The run is parked: its prompt ends this response, and the
			// session's next message answers it.
			prompt := ev.Approval.Prompt
			if streamed {
				prompt = "\n\n" + prompt
			}
			start()
			streamed = true
			chunk(completion{Choices: []choice{{Delta: &delta{Content: prompt}}}})
			ev.Result = &agent.Result{}
		}
		if ev.Result == nil {
			if ev.Delta == "" {
				continue
			}
			start()
			streamed = true
			chunk(completion{Choices: []choice{{Delta: &delta{Content: ev.Delta}}}})
			if flusher != nil {
				flusher.Flush()
			}
			continue
		}
		res := ev.Result
		if res.ErrorCode != "" {
			status, msg := g.runFailure(r, ev.RunID, res)
			if !started {
				writeError(w, status, failureType(res.ErrorCode), res.ErrorCode, msg)
				return
			}
			b, _ := json.Marshal(struct {
				Error apiError `json:"error"`
			}{apiError{Message: withRequestID(msg, requestID(r.Context())), Type: failureType(res.ErrorCode), Code: res.ErrorCode}})
			w.Write([]byte("data: "))
			w.Write(b)
			w.Write([]byte("\n\n"))
		} else {
			start()
			if !streamed && res.Content != "" {
				// The answer was made before this request listened (a
				// step retried after a crash found it in the store).
				chunk(completion{Choices: []choice{{Delta: &delta{Content: res.Content}}}})
			}
			if len(res.ToolCalls) > 0 {
				chunk(completion{Choices: []choice{{Delta: &delta{ToolCalls: outCalls(res.ToolCalls, true)}}}})
			}
			chunk(completion{Choices: []choice{{Delta: &delta{}, FinishReason: ptr(cmp.Or(res.FinishReason, "stop"))}}})
			if includeUsage {
				chunk(completion{Choices: []choice{}, Usage: wsproto.UsageOf(res.Usage)})
			}
		}
		w.Write([]byte("data: [DONE]\n\n"))
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
}
