package agent

import "github.com/lambdaclaw/lambdaclaw/shared/core/store"

// Router is an Replier that hands each event to the replier of its
// run's reply channel (RunState.Reply.Channel); events of a channel
// without a replier are dropped.
type Router map[string]Replier

var _ Replier = Router{}

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

// Tee is a Replier that tells each of its repliers everything, in order.
type Tee []Replier

var _ Replier = Tee{}

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
