package main

import (
	"context"
	"io"
)

// mcpCommand runs `lambdaclaw mcp SUBCOMMAND`.
func mcpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if _, err := subcommand("mcp", []string{"serve"}, args, stdout, stderr); err != nil {
		return err
	}
	return mcpServeCommand(ctx, args[1:], mcpInput, stdout, stderr)
}
