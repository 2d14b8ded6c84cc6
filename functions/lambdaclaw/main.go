// Command lambdaclaw is the local lambdaclaw: the gateway server with
// embedded storage (`serve`), a terminal chat client for it (`chat`) and
// the commands that manage it (`agent`, `keys`, `cron`, `runs`, `mcp`, `status`, `telegram`, `discord`),
// which also manage a deployed stack (--stack, stack.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

const usage = `lambdaclaw — an AI agent gateway

Usage:
  lambdaclaw serve [--addr HOST:PORT] [--config FILE]   run the gateway
  lambdaclaw chat [--addr HOST:PORT|URL] [--agent NAME] [--user NAME] [--key KEY]
                                                        chat with an agent of the running gateway
  lambdaclaw mcp serve --stdio [--addr HOST:PORT|URL] [--key KEY]
                                                        serve the gateway's MCP tools to a desktop client
  lambdaclaw agent create NAME                          create a workspace; print its directory
  lambdaclaw agent list [--stack NAME]                  list the agents
  lambdaclaw agent show NAME                            print its bootstrap files and daily logs
  lambdaclaw agent delete NAME [--yes]                  delete its workspace
  lambdaclaw agent push|pull NAME --stack NAME [--dry-run]
                                                        copy its workspace to or from a deployed stack
  lambdaclaw keys create [--name N] [--agents a,b] [--autonomy LEVEL] [--rate N] [--admin]
                         [--daily-tokens N] [--monthly-tokens N] [--deny-tools a,b] [--stack NAME]
                                                        print a new API key (--admin: it also manages keys in the console;
                                                        token budgets and denied tools hold its runs)
  lambdaclaw keys list [--stack NAME]
  lambdaclaw keys revoke ID [--stack NAME]
  lambdaclaw cron add [--agent NAME] (--every D | --cron "EXPR" [--tz ZONE] | --at TIME) --message TEXT
        [--name N] [--session KEY] [--deliver TARGET] [--catch-up one|skip] [--max-runs-per-day N]
        [--token-budget N] [--owner O] [--stack NAME]   schedule a check-in; print its id
  lambdaclaw cron list [--owner O] [--stack NAME]       list your scheduled jobs
  lambdaclaw cron rm|run|pause|resume ID [--owner O] [--stack NAME]
                                                        delete, fire now, pause or resume a job
  lambdaclaw cron runs ID [--owner O] [--stack NAME]    a job's runs: time, outcome, tokens, delivered
  lambdaclaw runs list [--agent A] [--idle D] [--limit N] [--json] [--stack NAME]
                                                        the stuck runs: each holds its session's next messages back
  lambdaclaw runs retry RUN_ID|--all [--idle D] [--stack NAME]
                                                        step a stuck run again (--all: every run of RunFailures)
  lambdaclaw runs abandon RUN_ID [--idle D] [--stack NAME]
                                                        end a stuck run failed; its user is told
  lambdaclaw mcp list                                   start the configured MCP servers; status, tool count
  lambdaclaw mcp tools NAME                             an MCP server's tools as agents see them
  lambdaclaw mcp call NAME TOOL JSON                    call an MCP server's tool; print the result
  lambdaclaw status [--stack NAME]                      agents, keys, busy sessions, Telegram outbox
  lambdaclaw telegram setup|remove [--stack NAME]       register or remove the Telegram webhook
  lambdaclaw channel set-secret NAME --stack STACK       store channels.NAME of the config file in the stack's secret
  lambdaclaw channel status [--stack NAME]              the channels (Slack, Discord, WhatsApp): webhooks, secrets, outboxes
  lambdaclaw discord register                           register the Discord slash commands; print the invite address
  lambdaclaw doctor [--stack NAME] [--health] [--timeout D]
                                                        check the setup; say how to fix what fails
  lambdaclaw version                                    print the version, commit and build date

Every command takes --help; "lambdaclaw help COMMAND" is the same.

The cron commands act as the owner user:local, the operator at this machine
(--owner O: user:NAME, key:KEY_ID or tg:CHAT_ID acts as another); admin keys
see and change user:local's jobs in the web console too.

--stack NAME [--region R] runs the command on the AWS deployment "make deploy"
made (the CloudFormation stack NAME, "Lambdaclaw") instead of the local server,
with your AWS credentials; the table, bucket and secrets come from the stack's outputs.

Environment:
  LAMBDACLAW_HOME    data directory (default ~/.lambdaclaw)
  LAMBDACLAW_ADDR    listen address, and the address chat connects to (default 127.0.0.1:8080)
  LAMBDACLAW_API_KEY the API key chat and mcp serve use
  LAMBDACLAW_CONFIG  config file (default $LAMBDACLAW_HOME/config.yaml)
  TELEGRAM_BOT_TOKEN, TELEGRAM_API_BASE
                     the Telegram bot token and Bot API server
  OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL
                     the default provider when the config file names none
  AWS_PROFILE, AWS_REGION, AWS_ACCESS_KEY_ID, …
                     the credentials and Region of --stack (the AWS SDK's default chain)
  CLOUDFORMATION_ENDPOINT, DYNAMODB_ENDPOINT, SECRETSMANAGER_ENDPOINT, S3_ENDPOINT,
  STEPFUNCTIONS_ENDPOINT, LAMBDA_ENDPOINT, SQS_ENDPOINT
                     AWS endpoint overrides for --stack (local engines, tests)
`

func main() {
	if filepath.Base(os.Args[0]) == bridgeClient {
		// The tool bridge's client, in a sandbox (bwrap mounts this
		// program there under that name).
		os.Exit(sandbox.Client(sandbox.SocketPath, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "lambdaclaw:", err)
		}
		os.Exit(1)
	}
}

// errUsage says that the usage was printed on stderr; errHelp that it was
// printed on stdout because it was asked for.
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

// run runs the command args. Help asked for is a success.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := dispatch(ctx, args, stdout, stderr); !errors.Is(err, errHelp) {
		return err
	}
	return nil
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "agent", "agents":
		return agentCommand(ctx, args[1:], stdout, stderr)
	case "keys":
		return keys(ctx, args[1:], stdout, stderr)
	case "cron":
		return cronCommand(ctx, args[1:], stdout, stderr)
	case "runs":
		return runsCommand(ctx, args[1:], stdout, stderr)
	case "telegram":
		return telegramCommand(ctx, args[1:], stdout, stderr)
	case "channel", "channels":
		return channelCommand(ctx, args[1:], stdout, stderr)
	case "discord":
		return discordCommand(ctx, args[1:], stdout, stderr)
	case "mcp":
		return mcpCommand(ctx, args[1:], stdout, stderr)
	case "status":
		return statusCommand(ctx, args[1:], stdout, stderr)
	case "doctor":
		return doctorCommand(ctx, args[1:], stdout, stderr)
	case "chat":
		return chatCommand(ctx, args[1:], chatInput, stdout, stderr)
	case sandboxInit:
		// Not for people: the first program of a sandbox, which sets its
		// limits and runs the command (shared/adapters/bwrap).
		return runSandboxInit(args[1:], stderr)
	case "version", "--version", "-v":
		if _, err := newFlags("version", "", "Print the version, the commit it was built from and the build date.", stderr).parse(args[1:], 0, 0, stdout); err != nil {
			return err
		}
		printVersion(stdout, currentBuild())
		return nil
	case "help", "--help", "-help", "-h":
		if len(args) > 1 && args[1] != "help" && args[1][0] != '-' {
			// "help agent create" is "agent create --help".
			return dispatch(ctx, append(args[1:], "--help"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return errHelp
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
}
