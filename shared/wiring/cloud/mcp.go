package cloud

import (
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
