package main

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildInfo(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name string
		set  build
		info *debug.BuildInfo // nil: no build information
		want build
	}{
		{"ldflags win", build{Version: "v1.2.0", Commit: "abc123", Date: "2026-01-02T03:04:05Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "v1.1.0"}, Settings: vcs("fff", "2020-01-01T00:00:00Z", "false")},
			build{Version: "v1.2.0", Commit: "abc123", Date: "2026-01-02T03:04:05Z"}},
		{"go install of a tag", build{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}},
			build{Version: "v1.3.0", Commit: "unknown", Date: "unknown"}},
		{"go install of a commit", build{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126010203-0123456789ab"}},
			build{Version: "v0.0.0-20261126010203-0123456789ab", Commit: "0123456789ab", Date: "2026-11-26T01:02:03Z"}},
		{"go install of a commit after a tag", build{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.3.1-0.20261126010203-0123456789ab"}},
			build{Version: "v1.3.1-0.20261126010203-0123456789ab", Commit: "0123456789ab", Date: "2026-11-26T01:02:03Z"}},
		{"go build in a checkout", build{},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "2026-11-25T10:00:00Z", "false")},
			build{Version: "dev", Commit: "0123456789abcdef", Date: "2026-11-25T10:00:00Z"}},
		{"go build of a modified checkout", build{},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "2026-11-25T10:00:00Z", "true")},
			build{Version: "dev", Commit: "0123456789abcdef-dirty", Date: "2026-11-25T10:00:00Z"}},
		{"only the version set", build{Version: "v2.0.0"},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "2026-11-25T10:00:00Z", "false")},
			build{Version: "v2.0.0", Commit: "0123456789abcdef", Date: "2026-11-25T10:00:00Z"}},
		{"nothing known", build{}, nil, build{Version: "dev", Commit: "unknown", Date: "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildInfo(tt.set, func() (*debug.BuildInfo, bool) { return tt.info, tt.info != nil })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("buildInfo (-want +got):\n%s", diff)
			}
		})
	}
}
