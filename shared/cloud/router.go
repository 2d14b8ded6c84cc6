package cloud

import (
	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
)

// Router is an agent.Replier that hands each event to the replier of its
// run's reply channel (RunState.Reply.Channel); events of a channel
// without a replier are dropped.
type Router map[string]agent.Replier

var _ agent.Replier = Router{}

// Delta implements agent.Replier.
func (r Router) Delta(st agent.RunState, text string) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Delta(st, text)
	}
}

// Approval implements agent.Replier.
func (r Router) Approval(st agent.RunState, a store.Approval) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Approval(st, a)
	}
}

// Finish implements agent.Replier.
func (r Router) Finish(st agent.RunState, res agent.Result) {
	if p, ok := r[st.Reply.Channel]; ok {
		p.Finish(st, res)
	}
}
