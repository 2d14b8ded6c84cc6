package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// AnswerArtifact is the id and name of the artifact that holds an
// agent's answer.
const AnswerArtifact = "answer"

// deliverTimeout bounds handing one message to the loop, which is not
// cancelled with the request, so that it never stops halfway.
const deliverTimeout = 30 * time.Second

// maxTaskID bounds the task ids read.
const maxTaskID = 64 + 1 + 4*agent.MaxSessionKey/3 + 4

// call is one JSON-RPC request of key k to an agent, in dialect d.
type call struct {
	h     *Handler
	k     store.APIKey
	agent string
	d     dialect
	id    json.RawMessage
}

// taskID is the id of the task that is run runID in context ctxID.
func taskID(runID, ctxID string) string {
	return runID + "." + base64.RawURLEncoding.EncodeToString([]byte(ctxID))
}

// parseTaskID reads a task id back.
func parseTaskID(id string) (runID, ctxID string, ok bool) {
	if len(id) > maxTaskID {
		return "", "", false
	}
	runID, enc, ok := strings.Cut(id, ".")
	if !ok || runID == "" {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", "", false
	}
	return runID, string(b), true
}

// notFound is the error of a task that does not exist or is another
// key's.
func notFound(id string) *RPCError { return rpcErr(CodeTaskNotFound, "task not found: %q", id) }

// lookup finds the caller's task id: its run's state and outcome, and its
// context. A task of another key's session, or of another agent, is not
// found.
func (c *call) lookup(ctx context.Context, id string) (agent.RunState, *agent.Result, string, *RPCError) {
	runID, ctxID, ok := parseTaskID(id)
	if !ok {
		return agent.RunState{}, nil, "", notFound(id)
	}
	st, res, err := c.h.cfg.Outcomes.Outcome(ctx, runID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return st, nil, "", notFound(id)
	case err != nil:
		c.h.cfg.Log.Error("a2a: read task", "run_id", runID, "error", err)
		return st, nil, "", rpcErr(CodeInternal, "could not read the task; try again")
	}
	if _, sid := c.h.cfg.Identity.Session(c.agent, Channel, c.k.ID, ctxID); st.Agent != c.agent || sid != st.SessionID {
		return st, nil, "", notFound(id)
	}
	return st, res, ctxID, nil
}

// taskOf is the task of run st in context ctxID, whose outcome is res
// (nil while it works).
func taskOf(st agent.RunState, res *agent.Result, ctxID string) Task {
	t := Task{ID: taskID(st.RunID, ctxID), ContextID: ctxID, Status: TaskStatus{State: StateWorking}}
	now := time.Now().UTC()
	t.Status.Timestamp = &now
	switch {
	case res == nil:
	case st.Parked():
		t.Status.State = StateInputRequired
		t.Status.Message = agentMessage(t, res.Content)
	case res.ErrorCode == agent.CodeCancelled:
		t.Status.State = StateCanceled
	case res.ErrorCode != "":
		t.Status.State = StateFailed
		t.Status.Message = agentMessage(t, res.Error)
	default:
		t.Status.State = StateCompleted
		t.Artifacts = []Artifact{answer(res.Content)}
	}
	return t
}

func answer(text string) Artifact {
	return Artifact{ArtifactID: AnswerArtifact, Name: AnswerArtifact, Parts: []Part{TextPart(text)}}
}

func agentMessage(t Task, text string) *Message {
	return &Message{MessageID: agent.NewID(), ContextID: t.ContextID, TaskID: t.ID, Role: RoleAgent, Parts: []Part{TextPart(text)}}
}

// send delivers a message and answers with its task: when it is
// finished or waits for an answer (at once with returnImmediately), or,
// when stream, as events while it runs.
func (c *call) send(w http.ResponseWriter, r *http.Request, raw json.RawMessage, stream bool) {
	req, rerr := c.d.send(raw)
	if rerr == nil {
		rerr = c.check(req)
	}
	if rerr != nil {
		writeRPC(w, c.id, nil, rerr)
		return
	}
	text, _ := Text(req.Message.Parts)
	ctxID := req.Message.ContextID
	answering := req.Message.TaskID != ""
	if answering {
		st, res, tctx, rerr := c.lookup(r.Context(), req.Message.TaskID)
		if rerr == nil {
			text, rerr = answerOf(taskOf(st, res, tctx), ctxID, text)
		}
		if rerr != nil {
			writeRPC(w, c.id, nil, rerr)
			return
		}
		ctxID = tctx
	}
	if ctxID == "" {
		ctxID = agent.NewID()
	}
	if err := agent.CheckSessionKey("contextId", ctxID); err != nil {
		writeRPC(w, c.id, nil, rpcErr(CodeInvalidParams, "%v", err))
		return
	}
	autonomy, err := tool.ParseAutonomy(c.k.Autonomy)
	if err != nil {
		autonomy = tool.ReadOnly // the safest
	}
	owner, sid := c.h.cfg.Identity.Session(c.agent, Channel, c.k.ID, ctxID)
	runID := ""
	if id := req.Message.MessageID; id != "" && !answering {
		// A message sent again finds the run it started.
		sum := sha256.Sum256([]byte(sid + "\x00" + id))
		runID = hex.EncodeToString(sum[:16])
	}
	f := &agent.Follower{Events: c.h.cfg.Events}
	defer f.Close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), deliverTimeout)
	defer cancel()
	st, err := c.h.cfg.Runner.Deliver(dctx, agent.Input{
		RunID: runID, SessionID: sid, Agent: c.agent, Owner: owner,
		Messages: []chat.Message{{Role: chat.User, Content: text}},
		Autonomy: autonomy, Stream: stream, Interactive: true,
		// The gateway's channel: its runs' events reach the hub, locally
		// and from the step function on AWS.
		Reply:   agent.Reply{Channel: gateway.Channel},
		Channel: Channel,
	}, f.Follow)
	if rerr := c.deliverError(err, sid); rerr != nil {
		writeRPC(w, c.id, nil, rerr)
		return
	}
	t := taskOf(st, nil, ctxID)
	// A run found finished (the message was sent before) tells nothing
	// more: its outcome is read.
	done, res, err := c.h.cfg.Outcomes.Outcome(r.Context(), st.RunID)
	settled := err == nil && res != nil
	switch {
	case stream:
		s := newStream(w)
		s.event(c, StreamResponse{Task: &t})
		if settled {
			// It may have ended before its outcome was read: the pieces
			// it told this request's subscription come first.
			c.told(f.Sub, t, s)
			c.finish(s, taskOf(done, res, ctxID))
			return
		}
		c.follow(r.Context(), f.Sub, t, s, nil)
	case settled:
		final := taskOf(done, res, ctxID)
		writeRPC(w, c.id, c.d.result(StreamResponse{Task: &final}), nil)
	case req.Config != nil && req.Config.ReturnImmediately:
		writeRPC(w, c.id, c.d.result(StreamResponse{Task: &t}), nil)
	default:
		final, rerr := c.wait(r.Context(), f.Sub, t)
		if rerr != nil {
			writeRPC(w, c.id, nil, rerr)
			return
		}
		writeRPC(w, c.id, c.d.result(StreamResponse{Task: &final}), nil)
	}
}

// check checks a message sent.
func (c *call) check(req SendRequest) *RPCError {
	if req.Message == nil {
		return rpcErr(CodeInvalidParams, "message is required")
	}
	if req.Message.Role == RoleAgent {
		return rpcErr(CodeInvalidParams, "a message sent to an agent is the user's (role ROLE_USER)")
	}
	text, err := Text(req.Message.Parts)
	if err != nil {
		return rpcErr(CodeUnsupportedContent, "%v", err)
	}
	if strings.TrimSpace(text) == "" {
		return rpcErr(CodeInvalidParams, "the message has no text")
	}
	return nil
}

// answerOf is the message that answers task t, which a message of text
// in context ctxID names: "/yes", "/no" or "/always" for a task that
// waits for an approval.
func answerOf(t Task, ctxID, text string) (string, *RPCError) {
	switch {
	case ctxID != "" && ctxID != t.ContextID:
		return "", rpcErr(CodeInvalidParams, "task %q is not of context %q", t.ID, ctxID)
	case t.Status.State != StateInputRequired:
		return "", rpcErr(CodeInvalidParams, "task %q is %s and waits for no input: send a new message without taskId", t.ID, legacyState(t.Status.State))
	}
	dec, ok := agent.ParseDecision(text)
	if !ok {
		return "", rpcErr(CodeInvalidParams, "task %q waits for an approval: answer yes, no or always", t.ID)
	}
	return "/" + string(dec), nil
}

// deliverError is the JSON-RPC error of a message Deliver refused.
func (c *call) deliverError(err error, sid string) *RPCError {
	var ie *agent.InputError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, agent.ErrMayNotApprove), errors.Is(err, agent.ErrUnknownAgent), errors.As(err, &ie):
		return rpcErr(CodeInvalidParams, "%v", err)
	case errors.Is(err, store.ErrStorageFull):
		c.h.cfg.Log.Error("a2a: deliver message: storage full", "session_id", sid, "error", err)
		return rpcErr(CodeInternal, "%s", agent.StorageFullMessage)
	default:
		c.h.cfg.Log.Error("a2a: deliver message", "session_id", sid, "error", err)
		return rpcErr(CodeInternal, "could not start the run; try again")
	}
}

// outcome is the task t becomes with ev, and whether ev ends what the
// client waits for (an answer, a failure, a question).
func outcome(t Task, ev agent.Event) (Task, bool) {
	st := agent.RunState{RunID: ev.RunID}
	var res *agent.Result
	switch {
	case ev.Approval != nil:
		st.Step = agent.StepWait
		res = &agent.Result{Content: ev.Approval.Prompt}
	case ev.Result != nil:
		res = ev.Result
	default:
		return t, false
	}
	return taskOf(st, res, t.ContextID), true
}

// wait waits for task t's outcome.
func (c *call) wait(ctx context.Context, sub *agent.Subscription, t Task) (Task, *RPCError) {
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return t, rpcErr(CodeInternal, "the request ended before the agent answered: %v", err)
		}
		if nt, done := outcome(t, ev); done {
			return nt, nil
		}
	}
}

// follow streams task t's events until its outcome: the answer's pieces
// as appended chunks of its artifact, then the answer whole and the
// final status. poll, when set, reads the task again after each
// KeepAlive of silence (a resubscription, whose run may tell another
// process only).
func (c *call) follow(ctx context.Context, sub *agent.Subscription, t Task, s *stream, poll func() (Task, bool)) {
	pieces := 0
	for {
		next, cancel := context.WithTimeout(ctx, c.h.cfg.KeepAlive)
		ev, err := sub.Next(next)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return // the client left; the run goes on and is kept
		case err != nil:
			if poll != nil {
				if nt, done := poll(); done {
					c.finish(s, nt)
					return
				}
			}
			s.keepAlive()
		case ev.Delta != "":
			c.piece(s, t, ev.Delta, pieces)
			pieces++
		default:
			if nt, done := outcome(t, ev); done {
				c.finish(s, nt)
				return
			}
		}
	}
}

// piece streams text as the n-th (from 0) piece of task t's answer.
func (c *call) piece(s *stream, t Task, text string, n int) {
	s.event(c, StreamResponse{ArtifactUpdate: &ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID,
		Artifact: Artifact{ArtifactID: AnswerArtifact, Name: AnswerArtifact, Parts: []Part{TextPart(text)}}, Append: n > 0}})
}

// told streams the pieces of task t's answer that sub holds already,
// without waiting for more.
func (c *call) told(sub *agent.Subscription, t Task, s *stream) {
	if sub == nil {
		return
	}
	now, cancel := context.WithCancel(context.Background())
	cancel() // Next returns what it holds, then the context's error
	for n := 0; ; {
		ev, err := sub.Next(now)
		if err != nil {
			return
		}
		if ev.Delta != "" {
			c.piece(s, t, ev.Delta, n)
			n++
		}
	}
}

// finish ends a stream with task t's outcome: its answer whole, as the
// last chunk that replaces the pieces, then its status.
func (c *call) finish(s *stream, t Task) {
	for _, a := range t.Artifacts {
		s.event(c, StreamResponse{ArtifactUpdate: &ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}})
	}
	s.event(c, StreamResponse{StatusUpdate: &StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}})
}

// requested reads the params of a request about a task and finds the
// caller's task; an error is written, and ok false.
func (c *call) requested(w http.ResponseWriter, r *http.Request, raw json.RawMessage) (st agent.RunState, t Task, ok bool) {
	var req TaskRequest
	rerr := decodeParams(raw, &req)
	var res *agent.Result
	var ctxID string
	if rerr == nil {
		st, res, ctxID, rerr = c.lookup(r.Context(), req.ID)
	}
	if rerr != nil {
		writeRPC(w, c.id, nil, rerr)
		return st, t, false
	}
	return st, taskOf(st, res, ctxID), true
}

// get answers GetTask.
func (c *call) get(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	if _, t, ok := c.requested(w, r, raw); ok {
		writeRPC(w, c.id, c.d.task(t), nil)
	}
}

// cancel answers CancelTask: a task not yet finished is stopped
// (cancelled at once when it waits; a running step is cut).
func (c *call) cancel(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	st, t, ok := c.requested(w, r, raw)
	if !ok {
		return
	}
	if Terminal(t.Status.State) {
		writeRPC(w, c.id, nil, rpcErr(CodeTaskNotCancelable, "task %q is %s", t.ID, legacyState(t.Status.State)))
		return
	}
	if _, err := c.h.cfg.Stopper.Stop(context.WithoutCancel(r.Context()), st.SessionID); err != nil {
		c.h.cfg.Log.Error("a2a: cancel task", "run_id", st.RunID, "error", err)
		writeRPC(w, c.id, nil, rpcErr(CodeInternal, "could not cancel the task; try again"))
		return
	}
	t.Status = TaskStatus{State: StateCanceled, Timestamp: t.Status.Timestamp}
	writeRPC(w, c.id, c.d.task(t), nil)
}

// subscribe answers SubscribeToTask: the task as it is, then, until it
// is finished or waits for an answer, its events.
func (c *call) subscribe(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	var req TaskRequest
	if rerr := decodeParams(raw, &req); rerr != nil {
		writeRPC(w, c.id, nil, rerr)
		return
	}
	runID, _, _ := parseTaskID(req.ID)
	f := &agent.Follower{Events: c.h.cfg.Events}
	defer f.Close()
	// Subscribed before the task is read, so nothing falls between.
	f.Follow(runID)
	st, res, ctxID, rerr := c.lookup(r.Context(), req.ID)
	if rerr != nil {
		writeRPC(w, c.id, nil, rerr)
		return
	}
	t := taskOf(st, res, ctxID)
	s := newStream(w)
	s.event(c, StreamResponse{Task: &t})
	if res != nil {
		return
	}
	c.follow(r.Context(), f.Sub, t, s, func() (Task, bool) {
		st, res, ctxID, rerr := c.lookup(r.Context(), req.ID)
		if rerr != nil || res == nil {
			return t, false
		}
		return taskOf(st, res, ctxID), true
	})
}

// stream writes server-sent events, each a JSON-RPC response.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *stream) event(c *call, ev StreamResponse) {
	b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: c.id, Result: c.d.result(ev)})
	if err != nil {
		return
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	_ = s.rc.Flush()
}

func (s *stream) keepAlive() {
	fmt.Fprint(s.w, ": keep-alive\n\n")
	_ = s.rc.Flush()
}
