package sandbox

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero is the defaults", Limits{}, DefaultLimits()},
		{"set fields stay", Limits{Memory: 1 << 30, Pids: 32, Disk: 1 << 30},
			Limits{Memory: 1 << 30, CPUs: 1, Pids: 32, FileSize: 64 << 20, Output: 1 << 20, WallTime: 30 * time.Second, Disk: 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults (-want +got):\n%s", diff)
			}
		})
	}
	d := DefaultLimits()
	if d.Memory != 512<<20 || d.CPUs != 1 || d.Pids != 256 || d.Disk != 256<<20 {
		t.Errorf("defaults %+v are not seed 004's 512 MB, 1 CPU, 256 pids, with 256 MB of disk", d)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   Limits
		ok   bool
	}{
		{"defaults", DefaultLimits(), true},
		{"tiny memory", Limits{Memory: 1 << 20}.WithDefaults(), false},
		{"one pid", Limits{Pids: 1}.WithDefaults(), false},
		{"negative cpus", Limits{CPUs: -1}.WithDefaults(), false},
		{"a millisecond", Limits{WallTime: time.Millisecond}.WithDefaults(), false},
		{"a kilobyte of disk", Limits{Disk: 1 << 10}.WithDefaults(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.in.Check(); (err == nil) != tt.ok {
				t.Errorf("Check() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestWall(t *testing.T) {
	l := Limits{WallTime: time.Minute}
	tests := []struct {
		timeout, want time.Duration
	}{
		{0, time.Minute},
		{10 * time.Second, 10 * time.Second},
		{time.Hour, time.Minute},
	}
	for _, tt := range tests {
		if got := (Request{Timeout: tt.timeout, Limits: l}).Wall(); got != tt.want {
			t.Errorf("Wall with timeout %s = %s, want %s", tt.timeout, got, tt.want)
		}
	}
}
