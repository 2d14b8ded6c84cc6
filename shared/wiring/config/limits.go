package config

import (
	"fmt"
	"time"
)

// Limits bound what one request, model reply or tool call may use, so that
// a hostile client or a runaway model cannot exhaust a small machine. Zero
// fields take the defaults below.
type Limits struct {
	// MaxReplyBytes caps one model reply (content plus tool-call
	// arguments); a longer reply is cut and ends with finish_reason
	// "length".
	MaxReplyBytes int `yaml:"max_reply_bytes"`
	// MaxToolArgsBytes caps the arguments of one tool call; a larger call
	// is answered with an error instead of running.
	MaxToolArgsBytes int `yaml:"max_tool_args_bytes"`
	// MaxToolResultBytes caps one tool result kept in history.
	MaxToolResultBytes int `yaml:"max_tool_result_bytes"`
	// MaxFileBytes caps the size of one file the file tools write.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// WorkspaceQuotaBytes caps the total size of an agent's workspace as
	// the file tools see it.
	WorkspaceQuotaBytes int64 `yaml:"workspace_quota_bytes"`
	// MaxJobsPerOwner caps the scheduled jobs one person (owner) has; the
	// schedule tool refuses to create more.
	MaxJobsPerOwner int `yaml:"max_jobs_per_owner"`
	// Media bound the images, audio and files of one message (media.go).
	Media MediaLimits `yaml:"media"`
	// DelegationDepth is how deep delegations between agents nest,
	// DelegationFanOut how many one model reply may start, and
	// DelegationTimeout how long a delegated run may take; zero takes the
	// loop's defaults (3, 4, 10m: agent.DelegationLimits).
	DelegationDepth   int      `yaml:"delegation_depth"`
	DelegationFanOut  int      `yaml:"delegation_fan_out"`
	DelegationTimeout Duration `yaml:"delegation_timeout"`
}

// Default limits: they keep a 1 GB machine safe under hostile use.
const (
	DefaultMaxReplyBytes       = 1 << 20
	DefaultMaxToolArgsBytes    = 1 << 20
	DefaultMaxToolResultBytes  = 100 << 10
	DefaultMaxFileBytes        = 10 << 20
	DefaultWorkspaceQuotaBytes = 100 << 20
	DefaultMaxJobsPerOwner     = 20
)

// Server tunes the local HTTP server against slow or greedy clients.
type Server struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout Duration `yaml:"read_timeout"`
	// IdleTimeout closes keep-alive connections left idle this long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConcurrentPerKey caps the requests one API key has in flight.
	MaxConcurrentPerKey int `yaml:"max_concurrent_requests_per_key"`
	// MaxWebSocketsPerKey caps the WebSocket connections one API key holds
	// open.
	MaxWebSocketsPerKey int `yaml:"max_websockets_per_key"`
}

// Default server settings.
const (
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = 30 * time.Second
	DefaultIdleTimeout         = 2 * time.Minute
	DefaultMaxConcurrentPerKey = 32
	DefaultMaxWebSocketsPerKey = 16
)

// fill applies the defaults and rejects negative values.
func (l *Limits) fill() error {
	for name, v := range map[string]int64{
		"max_reply_bytes": int64(l.MaxReplyBytes), "max_tool_args_bytes": int64(l.MaxToolArgsBytes),
		"max_tool_result_bytes": int64(l.MaxToolResultBytes), "max_file_bytes": l.MaxFileBytes,
		"workspace_quota_bytes": l.WorkspaceQuotaBytes, "max_jobs_per_owner": int64(l.MaxJobsPerOwner),
		"delegation_depth": int64(l.DelegationDepth), "delegation_fan_out": int64(l.DelegationFanOut), "delegation_timeout": int64(l.DelegationTimeout),
	} {
		if v < 0 {
			return fmt.Errorf("config: limits.%s must not be negative", name)
		}
	}
	if err := l.Media.check(); err != nil {
		return err
	}
	l.MaxReplyBytes = orDefault(l.MaxReplyBytes, DefaultMaxReplyBytes)
	l.MaxToolArgsBytes = orDefault(l.MaxToolArgsBytes, DefaultMaxToolArgsBytes)
	l.MaxToolResultBytes = orDefault(l.MaxToolResultBytes, DefaultMaxToolResultBytes)
	l.MaxFileBytes = orDefault(l.MaxFileBytes, DefaultMaxFileBytes)
	l.WorkspaceQuotaBytes = orDefault(l.WorkspaceQuotaBytes, DefaultWorkspaceQuotaBytes)
	l.MaxJobsPerOwner = orDefault(l.MaxJobsPerOwner, DefaultMaxJobsPerOwner)
	return nil
}

// fill applies the defaults and rejects negative values.
func (s *Server) fill() error {
	if s.ReadHeaderTimeout < 0 || s.ReadTimeout < 0 || s.IdleTimeout < 0 || s.MaxConcurrentPerKey < 0 || s.MaxWebSocketsPerKey < 0 {
		return fmt.Errorf("config: server settings must not be negative")
	}
	s.ReadHeaderTimeout = orDefault(s.ReadHeaderTimeout, Duration(DefaultReadHeaderTimeout))
	s.ReadTimeout = orDefault(s.ReadTimeout, Duration(DefaultReadTimeout))
	s.IdleTimeout = orDefault(s.IdleTimeout, Duration(DefaultIdleTimeout))
	s.MaxConcurrentPerKey = orDefault(s.MaxConcurrentPerKey, DefaultMaxConcurrentPerKey)
	s.MaxWebSocketsPerKey = orDefault(s.MaxWebSocketsPerKey, DefaultMaxWebSocketsPerKey)
	return nil
}

func orDefault[T int | int64 | Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
