package scrub

import (
	"context"
	"fmt"
	"log/slog"
)

// NewHandler returns a slog.Handler that scrubs each record before next
// handles it: the message, and every string, error and fmt.Stringer value
// among its attributes, also inside groups and after resolving LogValuers.
// Other values (numbers, times, durations) pass as they are. Attributes
// added with WithAttrs are scrubbed once, when they are added.
//
// Logs carry errors from providers, URLs and tool output; wrapping the
// handler that writes them makes sure they carry only the redacted form.
// A record waits only for the patterns that may match it (see prepare).
func NewHandler(next slog.Handler) slog.Handler {
	return &handler{next: next}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i] = scrubAttr(a)
	}
	return &handler{next: h.next.WithAttrs(scrubbed)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

// scrubAttr returns a with its value scrubbed.
func scrubAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); s != "" {
			if out := Scrub(s); out != s {
				return slog.String(a.Key, out)
			}
		}
		return slog.Attr{Key: a.Key, Value: v}
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, g := range group {
			out[i] = scrubAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Scrub(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, Scrub(x.String()))
		case []byte:
			return slog.String(a.Key, Scrub(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
