package cloud

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// MCPVar is the environment variable holding the deployment's MCP servers:
// the mcp section of a config file as encoding/json writes a config.MCP
// (durations in nanoseconds). Only HTTP servers (url) work in a Lambda
// function; a stdio server (command) is refused. ${VAR} in headers is
// read from the function's environment.
const MCPVar = "MCP_CONFIG"

// mcpFromEnv reads MCPVar strictly; unset, there are no servers.
func mcpFromEnv(getenv func(string) string) (config.MCP, error) {
	var m config.MCP
	v := getenv(MCPVar)
	if v == "" {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("cloud: %s: %w", MCPVar, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return m, fmt.Errorf("cloud: %s: more than one JSON value", MCPVar)
	}
	if err := m.CheckCloud(); err != nil {
		return m, fmt.Errorf("cloud: %s: %w", MCPVar, err)
	}
	return m, nil
}
