package llm

import "time"

// Bounded is a Provider that knows the longest its Generate takes: a call
// that does not stream, its retries, their waits and the fallbacks of a
// chain included. A streamed reply is bounded only by the time between
// its chunks, so a caller that needs the bound to hold gives the call a
// context with that deadline (agent.Loop does).
type Bounded interface {
	// Bound returns that duration; false when it is not known (a
	// provider it wraps declares none).
	Bound() (time.Duration, bool)
}

// Bound returns the longest a call of p takes (Bounded); false when p
// does not say.
func Bound(p Provider) (time.Duration, bool) {
	if b, ok := p.(Bounded); ok {
		return b.Bound()
	}
	return 0, false
}

// Bound is every attempt's bound and the longest wait between them: a
// wait, even one a provider asked for with Retry-After, is at most max.
func (r *retrier) Bound() (time.Duration, bool) {
	d, ok := Bound(r.p)
	if !ok {
		return 0, false
	}
	n := time.Duration(r.attempts)
	return n*d + (n-1)*r.max, true
}

// Bound is the wrapped provider's: an open circuit fails at once.
func (b *breaker) Bound() (time.Duration, bool) { return Bound(b.p) }

// Bound is the sum of the providers' bounds: each is tried in turn.
func (c *chain) Bound() (time.Duration, bool) {
	var sum time.Duration
	for _, p := range c.ps {
		d, ok := Bound(p)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}
