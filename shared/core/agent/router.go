package agent

import "github.com/lambdaclaw/lambdaclaw/shared/core/store"

// Router is an Replier that hands each event to the replier of its
// run's reply channel (RunState.Reply.Channel); events of a channel
// without a replier are dropped.
type Router map[string]Replier

var _ Outboxer = Router{}

// Delta implements Replier.
func (r Router) Delta(st RunState, text string) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Delta(st, text)
	}
}

// Approval implements Replier.
func (r Router) Approval(st RunState, a store.Approval) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Approval(st, a)
	}
}

// FlushDeltas passes the call on to the channel's replier, if it holds
// text back.
func (r Router) FlushDeltas(st RunState) {
	if p, ok := r[st.Reply.Channel].(deltaFlusher); ok {
		p.FlushDeltas(st)
	}
}

// Finish implements Replier.
func (r Router) Finish(st RunState, res Result) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Finish(st, res)
	}
}

// Outbox implements Outboxer: the outbox of the channel's replier, if it
// keeps one.
func (r Router) Outbox(st RunState, res Result) []store.OutboxMessage {
	if o, ok := r[st.Reply.Channel].(Outboxer); ok {
		return o.Outbox(st, res)
	}
	return nil
}

// ApprovalOutbox implements Outboxer: the approval's prompt in the
// outbox of the channel's replier, if it keeps one.
func (r Router) ApprovalOutbox(st RunState, a store.Approval) []store.OutboxMessage {
	if o, ok := r[st.Reply.Channel].(Outboxer); ok {
		return o.ApprovalOutbox(st, a)
	}
	return nil
}

// Committed implements Outboxer: the channel's replier is told Committed
// if it keeps an outbox, else Finish.
func (r Router) Committed(st RunState, res Result) {
	if p, ok := r[st.Reply.Channel]; ok {
		committed(p, st, res)
	}
}

// committed tells r that the run st ended with res, committed.
func committed(r Replier, st RunState, res Result) {
	if o, ok := r.(Outboxer); ok {
		o.Committed(st, res)
		return
	}
	r.Finish(st, res)
}

// Tee is a Replier that tells each of its repliers everything, in order.
type Tee []Replier

var _ Outboxer = Tee{}

// Delta implements Replier.
func (t Tee) Delta(st RunState, text string) {
	for _, r := range t {
		r.Delta(st, text)
	}
}

// FlushDeltas passes the call on to the repliers that hold text back.
func (t Tee) FlushDeltas(st RunState) {
	for _, r := range t {
		if f, ok := r.(deltaFlusher); ok {
			f.FlushDeltas(st)
		}
	}
}

// Approval implements Replier.
func (t Tee) Approval(st RunState, a store.Approval) {
	for _, r := range t {
		r.Approval(st, a)
	}
}

// Finish implements Replier.
func (t Tee) Finish(st RunState, res Result) {
	for _, r := range t {
		r.Finish(st, res)
	}
}

// Outbox implements Outboxer: the outboxes of the repliers that keep one.
func (t Tee) Outbox(st RunState, res Result) []store.OutboxMessage {
	var out []store.OutboxMessage
	for _, r := range t {
		if o, ok := r.(Outboxer); ok {
			out = append(out, o.Outbox(st, res)...)
		}
	}
	return out
}

// ApprovalOutbox implements Outboxer: the approval's prompt in the
// outboxes of the repliers that keep one.
func (t Tee) ApprovalOutbox(st RunState, a store.Approval) []store.OutboxMessage {
	var out []store.OutboxMessage
	for _, r := range t {
		if o, ok := r.(Outboxer); ok {
			out = append(out, o.ApprovalOutbox(st, a)...)
		}
	}
	return out
}

// Committed implements Outboxer.
func (t Tee) Committed(st RunState, res Result) {
	for _, r := range t {
		committed(r, st, res)
	}
}
