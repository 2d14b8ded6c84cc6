package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"sync"
)

// Set at build time by the Makefile:
//
//	-ldflags "-X main.version=v1.2.0 -X main.commit=0123abcd -X main.date=2026-01-02T03:04:05Z"
//
// A build without them (go build, go install) falls back to what the Go
// toolchain recorded in the binary (buildInfo).
var version, commit, date string

// build describes this binary: its version, the commit it was built from
// and when that was.
type build struct {
	Version, Commit, Date string
}

// pseudoVersion matches the tail of a Go module pseudo-version,
// v0.0.0-20261126010203-0123456789ab: the commit's UTC time and revision.
var pseudoVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[-.])(\d{14})-([0-9a-f]{12})(?:\+incompatible)?$`)
})

// currentBuild describes this binary.
func currentBuild() build {
	return buildInfo(build{Version: version, Commit: commit, Date: date}, debug.ReadBuildInfo)
}

// buildInfo returns what -ldflags set (set), else what read
// (debug.ReadBuildInfo) finds: the module version `go install …@version` built (with the commit
// and time a pseudo-version carries), and the vcs settings of a build in a
// git checkout. Unknown parts are "unknown"; the version is "dev" then.
func buildInfo(set build, read func() (*debug.BuildInfo, bool)) build {
	b := set
	if bi, ok := read(); ok {
		if v := bi.Main.Version; b.Version == "" && v != "" && v != "(devel)" {
			b.Version = v
			if m := pseudoVersion().FindStringSubmatch(v); m != nil {
				t := m[1]
				b.Commit = or(b.Commit, m[2])
				b.Date = or(b.Date, t[0:4]+"-"+t[4:6]+"-"+t[6:8]+"T"+t[8:10]+":"+t[10:12]+":"+t[12:14]+"Z")
			}
		}
		var rev, at string
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" && dirty {
			rev += "-dirty"
		}
		b.Commit, b.Date = or(b.Commit, rev), or(b.Date, at)
	}
	b.Version = or(b.Version, "dev")
	b.Commit, b.Date = or(b.Commit, "unknown"), or(b.Date, "unknown")
	return b
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// printVersion writes `lambdaclaw version`'s answer.
func printVersion(w io.Writer, b build) {
	fmt.Fprintf(w, "lambdaclaw %s\ncommit  %s\nbuilt   %s\ngo      %s %s/%s\n", b.Version, b.Commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
