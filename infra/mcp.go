package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
)

// The MCP servers of a deployment are the mcp: section of the agents file
// (-c agents_file=PATH, agents.go), as in the local configuration file,
// checked with the functions' own code (agentenv.EncodeMCP: HTTP servers
// only) and passed on in MCP_CONFIG to every function that gets
// AGENTS_CONFIG (the agents' mcp settings name the servers).
//
// A ${VAR} in a server's headers (Authorization: "Bearer ${TOKEN}") is a
// secret: its value never appears in the file, the template or the
// environment. The stack creates one Secrets Manager secret per variable,
// named <stack>/mcp/<VAR> and created without a value, which the operator
// puts afterwards (aws secretsmanager put-secret-value). The functions
// that run agents' turns, api and step, get MCP_SECRET_<VAR>=<its name>
// and may read it (and no other function may); shared/wiring/cloud reads
// it when a server first starts. Until it has a value the server that
// needs it fails to start (logged) and the others work.
//
// CloudFormation deletes a secret it removes without a recovery window,
// so the same stack can be deployed again after a destroy.

// mcpSecretName is the name of the secret holding ${v} of the stack's MCP
// servers' headers.
func mcpSecretName(stack, v string) string { return stack + "/mcp/" + v }

// checkEnvironment refuses agents and MCP servers whose definitions take
// more of the functions' environment than agentenv.MaxBytes: AGENTS_CONFIG,
// MCP_CONFIG and the MCP_SECRET_<VAR> variables, keys and values, which
// the stack named stack would set.
func (c Config) checkEnvironment(stack string) error {
	n := 0
	if c.AgentsConfig != "" {
		n += len(agentenv.Var) + len(c.AgentsConfig)
	}
	if c.MCPConfig != "" {
		n += len(agentenv.MCPVar) + len(c.MCPConfig)
	}
	for _, v := range c.MCP.HeaderVars() {
		n += len(agentenv.MCPSecretPrefix+v) + len(mcpSecretName(stack, v))
	}
	if n > agentenv.MaxBytes {
		return fmt.Errorf("context %s: the agents and MCP servers take %d bytes of the functions' environment (%s, %s and %s<VAR> for each ${VAR} of the headers), more than the %d it has room for (Lambda allows 4 KB in all): define fewer servers, agents or settings, or use shorter URLs and variable names",
			ctxAgentsFile, n, agentenv.Var, agentenv.MCPVar, agentenv.MCPSecretPrefix, agentenv.MaxBytes)
	}
	return nil
}

// mcpSecrets creates a secret, without a value, for each ${VAR} of the
// MCP servers' headers.
func (s *builder) mcpSecrets() {
	s.mcpSecret = map[string]awssecretsmanager.Secret{}
	for _, v := range s.cfg.MCP.HeaderVars() {
		secret := awssecretsmanager.NewSecret(s.stack, jsii.String("McpSecret_"+v), &awssecretsmanager.SecretProps{
			SecretName:  jsii.String(mcpSecretName(*s.stack.StackName(), v)),
			Description: jsii.String("lambdaclaw: the value of ${" + v + "} in the MCP servers' headers (put it with aws secretsmanager put-secret-value)"),
		})
		// Without a value, not with a generated placeholder: the server
		// fails to start with "no value" rather than call its remote
		// with a random token.
		secret.Node().DefaultChild().(awssecretsmanager.CfnSecret).AddPropertyDeletionOverride(jsii.String("GenerateSecretString"))
		s.mcpSecret[v] = secret
	}
}

// mcpEnv is the environment of the MCP servers' header secrets: the name
// of each, for the functions that run turns.
func (s *builder) mcpEnv() map[string]*string {
	env := map[string]*string{}
	for v := range s.mcpSecret {
		env[agentenv.MCPSecretPrefix+v] = jsii.String(mcpSecretName(*s.stack.StackName(), v))
	}
	return env
}

// grantMCPSecrets lets fn read the MCP servers' header secrets.
func (s *builder) grantMCPSecrets(fn awslambda.Function) {
	for _, v := range slices.Sorted(maps.Keys(s.mcpSecret)) {
		s.mcpSecret[v].GrantRead(fn, nil)
	}
}
