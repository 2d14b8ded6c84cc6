package gateway

import "testing"

func TestPerKeyForgetsIdleKeys(t *testing.T) {
	p := newPerKey(2, "code", "%d")
	steps := []struct {
		op   string // "+" acquires, "-" releases
		key  string
		ok   bool // what acquire reports
		keys int  // keys remembered afterwards
	}{
		{"+", "a", true, 1},
		{"+", "a", true, 1},
		{"+", "a", false, 1},
		{"+", "b", true, 2},
		{"-", "a", true, 2},
		{"+", "a", true, 2},
		{"-", "a", true, 2},
		{"-", "a", true, 1},
		{"-", "b", true, 0},
	}
	for i, s := range steps {
		ok := true
		if s.op == "+" {
			ok = p.acquire(s.key)
		} else {
			p.release(s.key)
		}
		if ok != s.ok || len(p.open) != s.keys {
			t.Fatalf("step %d (%s%s): ok %v, %d keys; want %v, %d", i, s.op, s.key, ok, len(p.open), s.ok, s.keys)
		}
	}
	for range 1000 {
		if !newPerKey(0, "", "").acquire("a") {
			t.Fatal("a zero limit refused")
		}
	}
}
