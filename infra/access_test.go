package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// accessPath holds every function's grants on the table, from the stack
// with every option on, for the functions' tests (tests/cloudtest), which
// allow a function's DynamoDB requests only as far as these grants do.
const accessPath = "testdata/table-access.json"

// tableGrant is one statement of a function on the table, as
// accessPath holds it (tests/cloudtest.Grant).
type tableGrant struct {
	Actions     []string `json:"actions"`
	Resource    string   `json:"resource"`
	LeadingKeys []string `json:"leading_keys,omitempty"`
}

// tableGrants returns the statements of the function's role on the table
// and its index (not its stream), sorted.
func tableGrants(t *testing.T, s *synthesized, function string) []tableGrant {
	t.Helper()
	table := s.template.GetResourceId(stringp("AWS::DynamoDB::Table"), nil)
	role := "${" + s.roleOf(t, s.functionID(t, function)) + "}"
	var out []tableGrant
	for _, st := range s.statements() {
		if !slices.Contains(st.roles, role) || st.raw["Effect"] != "Allow" {
			continue
		}
		for _, r := range st.resources {
			var res string
			switch got := render(r); got {
			case "${" + *table + ".Arn}":
				res = "table"
			case "${" + *table + ".Arn}/index/gsi1":
				res = "index/gsi1"
			default:
				if strings.Contains(got, *table) && !strings.Contains(got, *table+".StreamArn") {
					t.Errorf("%s: %v on %s", function, st.actions, got)
				}
				continue
			}
			g := tableGrant{Actions: slices.Sorted(slices.Values(st.actions)), Resource: res}
			if c, ok := st.raw["Condition"].(map[string]any); ok {
				like, _ := c["ForAllValues:StringLike"].(map[string]any)
				if len(c) != 1 || like == nil {
					t.Errorf("%s: condition %v", function, c)
				}
				for _, k := range list(like["dynamodb:LeadingKeys"]) {
					g.LeadingKeys = append(g.LeadingKeys, k.(string))
				}
			}
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b tableGrant) int {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return bytes.Compare(x, y)
	})
	return out
}

// TestTableAccessFile keeps testdata/table-access.json equal to the
// grants of the stack with every option on:
// go test -run TableAccessFile -update.
func TestTableAccessFile(t *testing.T) {
	s := stack(t, variantOpenSearch)
	all := map[string][]tableGrant{}
	for _, fn := range []string{"api", "ws", "telegram", "channels", "step", "scheduler", "indexer"} {
		all[fn] = tableGrants(t, s, fn)
	}
	got, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(accessPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(accessPath)
	if err != nil {
		t.Fatalf("%v (run: cd infra && go test -run TableAccessFile -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run cd infra && go test -run TableAccessFile -update\n--- synthesized:\n%s", accessPath, got)
	}
}

// TestTableGrants: no function may Scan the table or reach items it does
// not own. Each gets what it needs, on the key kinds it owns
// (dynamodb:LeadingKeys), and DescribeTable.
func TestTableGrants(t *testing.T) {
	describe := tableGrant{Actions: []string{"dynamodb:DescribeTable"}, Resource: "table"}
	items := func(keys []string, actions ...string) tableGrant {
		return tableGrant{Actions: slices.Sorted(slices.Values(actions)), Resource: "table", LeadingKeys: keys}
	}
	session := []string{"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem",
		"dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	memory := []string{"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
	sessions := []string{"SESSION#*", "RUN#*", "APPROVAL#*", "RESPONSE#*"}
	want := map[string][]tableGrant{
		// The web console lists an owner's sessions, the channels'
		// identities' sessions and the keys from the index, creates and
		// revokes keys, and lists, makes, pauses and deletes jobs.
		"api": {describe, items(sessions, session...), items([]string{"MEM#*"}, memory...),
			{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"OWNER#*", "CHSESSIONS#*", "KEYS"}},
			items([]string{"KEY#*"}, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
			items([]string{"KEYID#*"}, "dynamodb:GetItem", "dynamodb:PutItem"),
			items([]string{"CRON#*"}, "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"),
			items([]string{"CRONID#*"}, "dynamodb:PutItem", "dynamodb:DeleteItem"),
			items([]string{"BUDGET#*"}, "dynamodb:GetItem", "dynamodb:UpdateItem")},
		"ws": {describe, items(sessions, session...), items([]string{"KEY#*"}, "dynamodb:GetItem"),
			items([]string{"CONN#*"}, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
			items([]string{"WSUSER#*"}, "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem")},
		"telegram": {describe, items(sessions, session...),
			items([]string{"TGSEEN#*", "TGUSER#*", "TGCODE#*", "TGTRY#*", "TGOUT#*"}, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"),
			{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"TGOUT#*", "TGSEEN"}}},
		// A delivery of a job's firing claims it in one transaction.
		"scheduler": {describe, items(sessions, "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"),
			items([]string{"CRONID#*"}, "dynamodb:GetItem"),
			items([]string{"CRON#*"}, "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")},
		// A check-in run that ends is recorded on its job's run, and
		// delivered to a WebSocket user's connections; the schedule tool
		// and the heartbeats make, list and delete jobs.
		"step": {describe, items(sessions, session...), items([]string{"MEM#*"}, memory...),
			items([]string{"BUDGET#*"}, "dynamodb:GetItem", "dynamodb:UpdateItem"),
			items([]string{"JOB#*"}, "dynamodb:PutItem", "dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"),
			items([]string{"CRONID#*"}, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"),
			items([]string{"CRON#*"}, "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"),
			items([]string{"WSUSER#*"}, "dynamodb:Query", "dynamodb:DeleteItem"),
			items([]string{"TGOUT#*"}, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
			{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"TGOUT#*"}}},
		// The indexer reads the table's stream only.
		"indexer": nil,
		// The webhooks of Slack, Discord and WhatsApp keep each channel's
		// state (handled deliveries, users let in, codes and tries, the
		// outbox) and start runs.
		"channels": {describe, items(sessions, session...),
			items([]string{"SLACKSTATE#*", "SLACKSEEN#*", "SLACKUSER#*", "SLACKCODE#*", "SLACKTRY#*", "SLACKOUT#*",
				"DISCORDSTATE#*", "DISCORDSEEN#*", "DISCORDUSER#*", "DISCORDCODE#*", "DISCORDTRY#*", "DISCORDOUT#*",
				"WHATSAPPSTATE#*", "WHATSAPPSEEN#*", "WHATSAPPUSER#*", "WHATSAPPCODE#*", "WHATSAPPTRY#*", "WHATSAPPOUT#*"},
				"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"),
			{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"SLACKOUT#*", "SLACKSEEN", "DISCORDOUT#*",
				"DISCORDSEEN", "WHATSAPPOUT#*", "WHATSAPPSEEN"}}},
	}
	// The step function sends the channels' replies through their
	// outboxes, and keeps WhatsApp's customer service window in its state.
	stepChannels := []tableGrant{
		items([]string{"SLACKOUT#*", "SLACKSTATE#*", "DISCORDOUT#*", "DISCORDSTATE#*", "WHATSAPPOUT#*", "WHATSAPPSTATE#*"},
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"SLACKOUT#*", "DISCORDOUT#*", "WHATSAPPOUT#*"}},
	}
	sorted := func(gs []tableGrant) []tableGrant {
		gs = slices.Clone(gs)
		slices.SortFunc(gs, func(a, b tableGrant) int {
			x, _ := json.Marshal(a)
			y, _ := json.Marshal(b)
			return bytes.Compare(x, y)
		})
		return gs
	}
	for _, variant := range []string{variantDefault, variantOpenSearch} {
		s := stack(t, variant)
		for fn, w := range want {
			if !s.cfg.Telegram && fn == "telegram" || s.cfg.Search != SearchOpenSearch && fn == "indexer" || len(s.cfg.Channels) == 0 && fn == "channels" {
				continue
			}
			if !s.cfg.Telegram && fn == "step" {
				// Without Telegram, the step function has no outbox.
				w = w[:len(w)-2]
			}
			if len(s.cfg.Channels) > 0 && fn == "step" {
				w = append(slices.Clone(w), stepChannels...)
			}
			if got := tableGrants(t, s, fn); !equalJSON(got, sorted(w)) {
				g, _ := json.MarshalIndent(got, "", "  ")
				x, _ := json.MarshalIndent(sorted(w), "", "  ")
				t.Errorf("%s %s: table grants\n%s\nwant\n%s", variant, fn, g, x)
			}
		}
		// Nothing on the table without a key condition but DescribeTable;
		// no Scan, no wildcard.
		for _, st := range s.statements() {
			for _, a := range st.actions {
				if a == "dynamodb:Scan" || a == "dynamodb:*" || a == "dynamodb:PartiQLSelect" {
					t.Errorf("%s: %s granted by %s", variant, a, st.policy)
				}
			}
		}
	}
}
