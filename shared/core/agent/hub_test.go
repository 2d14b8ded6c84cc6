package agent

import (
	"context"
	"testing"
	"time"
)

func TestHubDeliversOnceToEachSubscriber(t *testing.T) {
	h := NewHub()
	st := RunState{RunID: "r1", SessionID: "s", Reply: Reply{Channel: "ws", To: "ws:conn"}}
	conn := h.Subscribe("ws:conn")
	h.Attach(RunKey("r1"), conn) // the connection follows the run too
	h.Attach(RunKey("r1"), conn)
	req := h.Subscribe(RunKey("r1")) // an HTTP request waits for the same run
	h.Delta(st, "a")
	h.Unsubscribe(RunKey("r1"), req)
	h.Delta(st, "b")

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, want := range []string{"a", "b"} {
		if ev, err := conn.Next(ctx); err != nil || ev.Delta != want || ev.RunID != "r1" {
			t.Fatalf("connection got %+v, %v; want delta %q", ev, err, want)
		}
	}
	if ev, err := req.Next(ctx); err != nil || ev.Delta != "a" {
		t.Fatalf("request got %+v, %v; want delta a", ev, err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if ev, err := conn.Next(short); err == nil {
		t.Errorf("connection got a duplicate: %+v", ev)
	}
	if ev, err := req.Next(short); err == nil {
		t.Errorf("unsubscribed request still got %+v", ev)
	}
}
