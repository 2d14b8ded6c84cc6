package agent

import (
	"context"
	"testing"
	"time"
)

func TestRouter(t *testing.T) {
	hub := NewHub()
	sub := hub.Subscribe(RunKey("r1"))
	router := Router{"http": hub}
	router.Delta(RunState{RunID: "r1", Reply: Reply{Channel: "tg"}}, "dropped")
	router.Delta(RunState{RunID: "r1", Reply: Reply{Channel: "http"}}, "kept")
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil || ev.Delta != "kept" {
		t.Errorf("first event %+v, %v; want the http delta only", ev, err)
	}
}
