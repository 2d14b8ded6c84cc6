package cloud

import (
	"context"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
)

// MCPVar is the environment variable holding the deployment's MCP servers:
// the mcp section of a config file as encoding/json writes a config.MCP
// (durations in nanoseconds), read by agentenv.DecodeMCP. Only HTTP
// servers (url) work in a Lambda function; a stdio server (command) is
// refused. A ${VAR} in headers is the value of the Secrets Manager secret
// MCP_SECRET_<VAR> names (the stack creates one per variable), else of
// the function's environment variable VAR.
const MCPVar = agentenv.MCPVar

// secretReadTimeout bounds the read of one header secret.
const secretReadTimeout = 10 * time.Second

// mcpGetenv returns the Getenv of the MCP servers: a variable that
// MCP_SECRET_<name> names a secret for is that secret's value, read when
// a server first starts and cached for the container's life (a failed
// read is not cached, so a server's restart reads again); any other is
// getenv's. A secret that cannot be read is logged (its name, never a
// value) and is unset: the server that needs it fails to start, and the
// others go on.
func mcpGetenv(s *secrets, getenv func(string) string, log *slog.Logger) func(string) string {
	return func(name string) string {
		id := getenv(agentenv.MCPSecretPrefix + name)
		if id == "" {
			return getenv(name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), secretReadTimeout)
		defer cancel()
		v, err := s.get(ctx, id)
		if err != nil {
			log.Warn("MCP header secret unreadable: set its value with aws secretsmanager put-secret-value",
				"var", name, "secret", id, "err", err)
			return ""
		}
		if v == "" {
			log.Warn("MCP header secret is empty: set its value with aws secretsmanager put-secret-value", "var", name, "secret", id)
		}
		return v
	}
}
