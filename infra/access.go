package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Table access: no function may Scan the table or touch what is not its
// own. Each function gets the actions it needs on the items whose
// partition key (the key kinds of shared/adapters/dynamo's package doc)
// it owns, with the condition dynamodb:LeadingKeys; Query on the index
// gsi1 only on the index partitions it reads; and DescribeTable, which
// the store calls on start. TransactWriteItems needs no action of its
// own: IAM authorizes the Put, Update, Delete and ConditionCheck it holds
// as PutItem, UpdateItem, DeleteItem and ConditionCheckItem, key by key.
//
// The grants are kept in testdata/table-access.json (TestTableAccessFile),
// and the functions' tests send their DynamoDB requests through a proxy
// that allows only what that file does (tests/cloudtest), so a grant too
// narrow for the code fails a test instead of a deployment.

// Key kinds: the partition key prefixes of shared/adapters/dynamo.
var (
	// sessionKeys are a session's items: its partition (history, queue,
	// lane, indexes) and the runs, approvals and responses it indexes.
	sessionKeys = []string{"SESSION#*", "RUN#*", "APPROVAL#*", "RESPONSE#*"}
	keyKeys     = []string{"KEY#*"}
	// keyIDKeys are the claims of key ids, naming their key's hash.
	keyIDKeys = []string{"KEYID#*"}
	connKeys  = []string{"CONN#*"}
	// wsUserKeys are the index of WebSocket connections by owner and
	// session, which check-ins to ws:<user> read.
	wsUserKeys = []string{"WSUSER#*"}
	memoryKeys = []string{"MEM#*"}
	jobKeys    = []string{"JOB#*"}
	// telegramKeys are the Telegram channel's: handled updates, users let
	// in by a code, used codes, chats' tries of codes, the outbox.
	telegramKeys = []string{"TGSEEN#*", "TGUSER#*", "TGCODE#*", "TGTRY#*", "TGOUT#*"}
	outboxKeys   = []string{"TGOUT#*"}
	// cronKeys are the scheduled check-ins': jobs and runs in the owner's
	// partition; cronIDKeys the claims of job ids, naming their owner.
	cronKeys   = []string{"CRON#*"}
	cronIDKeys = []string{"CRONID#*"}
	// budgetKeys are the token budgets' counters, one per budget and
	// period.
	budgetKeys = []string{"BUDGET#*"}
)

// Actions on items.
var (
	// sessionActions are what delivering messages and running steps do to
	// a session's items: read, write, delete (reset, expiry, stale
	// markers, in batches too) and the check of a transaction.
	sessionActions = []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
		"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"}
	// memoryActions are the memory tools' and the search's, which reads
	// back in a batch the memories other functions changed.
	memoryActions = []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
		"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem"}
	readActions = []string{"dynamodb:GetItem"}
	// budgetActions are the budgets': a counter read, and reserved,
	// charged or its notice claimed by an UpdateItem (conditional, or
	// several in a transaction).
	budgetActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
)

// grantItems lets fn do actions on the items whose partition key matches
// one of keys.
func (s *builder) grantItems(fn awslambda.Function, actions, keys []string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{s.table_.TableArn()},
		Conditions: &map[string]interface{}{
			"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": keys},
		},
	}))
}

// grantIndex lets fn Query the partitions of gsi1 that match keys.
func (s *builder) grantIndex(fn awslambda.Function, keys ...string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:Query"),
		Resources: &[]*string{jsii.String(*s.table_.TableArn() + "/index/gsi1")},
		Conditions: &map[string]interface{}{
			"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": keys},
		},
	}))
}

// grantTable gives fn DescribeTable, which the store calls when it starts,
// and what role needs of the items.
func (s *builder) grantTable(fn awslambda.Function, role string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeTable"),
		Resources: &[]*string{s.table_.TableArn()},
	}))
	switch role {
	case "api":
		// Inline runs of stateless requests use the memory tools, as
		// does the web console's memory view.
		s.grantItems(fn, sessionActions, sessionKeys)
		s.grantItems(fn, memoryActions, memoryKeys)
		// Every request checks its key (GetItem). The web console
		// (shared/channels/console) lists an owner's sessions from the
		// index (OWNER#<owner>); its admin keys list the sessions of the
		// channels' identities (CHSESSIONS#<channel>) and the keys
		// (KEYS), create one (its item and its id's claim, put in one
		// transaction) and revoke one (the claim read, the key updated).
		s.grantIndex(fn, "OWNER#*", "CHSESSIONS#*", "KEYS")
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, keyKeys)
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, keyIDKeys)
		// Its jobs view lists the owner's jobs and a job's runs, makes
		// one (the job and its id's claim put in one transaction),
		// pauses and resumes a job (its item replaced) and deletes one
		// (the job and its id's claim in one transaction, then its runs
		// in batches); the schedules follow (grantSchedules).
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem",
			"dynamodb:BatchWriteItem"}, cronKeys)
		s.grantItems(fn, []string{"dynamodb:PutItem", "dynamodb:DeleteItem"}, cronIDKeys)
		// Stateless runs' model calls are held to the token budgets,
		// which the console shows.
		s.grantItems(fn, budgetActions, budgetKeys)
	case "ws":
		s.grantItems(fn, sessionActions, sessionKeys)
		s.grantItems(fn, readActions, keyKeys)
		// A connection is recorded at $connect, read at every frame,
		// indexed under a session at its first message there (its item
		// updated and the index item put in one transaction), and
		// forgotten with its index items at $disconnect.
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, connKeys)
		s.grantItems(fn, []string{"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, wsUserKeys)
	case "telegram", "channels":
		s.grantItems(fn, sessionActions, sessionKeys)
		if role == "telegram" {
			s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"}, telegramKeys)
			s.grantIndex(fn, "TGOUT#*", "TGSEEN")
		}
	case "scheduler":
		// Check-ins queue runs: no approvals or responses are created.
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
			"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, sessionKeys)
		// A delivery claims its firing: the job's owner, the job, the
		// day's runs, and one transaction putting the run and moving the
		// job on.
		s.grantItems(fn, readActions, cronIDKeys)
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"}, cronKeys)
	case "step":
		s.grantItems(fn, sessionActions, sessionKeys)
		s.grantItems(fn, memoryActions, memoryKeys)
		// Every model call is held to the token budgets.
		s.grantItems(fn, budgetActions, budgetKeys)
		// Finished runs may queue jobs (conversations to record).
		s.grantItems(fn, []string{"dynamodb:PutItem", "dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, jobKeys)
		// A check-in run that ends records its end on its job's run
		// (schedule.Replier), reading the job for its delivery target;
		// the schedule tool lists, makes (the job and its id's claim in
		// one transaction) and deletes (with its runs) the jobs of the
		// person an agent talks to, and the heartbeats' jobs follow the
		// agents' settings (schedule.SyncHeartbeats).
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}, cronIDKeys)
		s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
			"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, cronKeys)
		// A check-in delivered to ws:<user> reads the user's
		// connections and removes those found gone.
		s.grantItems(fn, []string{"dynamodb:Query", "dynamodb:DeleteItem"}, wsUserKeys)
		if s.cfg.Telegram {
			// Replies go through the Telegram outbox.
			s.grantItems(fn, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, outboxKeys)
			s.grantIndex(fn, "TGOUT#*")
		}
	}
}
