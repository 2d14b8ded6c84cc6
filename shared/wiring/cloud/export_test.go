package cloud

import (
	"io"
	"log/slog"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// CaptureEvents makes r's loop write its events to w, their log lines
// and EMF lines, as New makes it write them to standard error, and
// returns the emitter. Call it before the handlers are made.
func (r *Root) CaptureEvents(w io.Writer) *obs.Emitter {
	e := obs.NewEmitter(slog.New(slog.NewJSONHandler(w, nil)), 1024, emf.New(w))
	r.events, r.Loop.Events = e, e
	return e
}
