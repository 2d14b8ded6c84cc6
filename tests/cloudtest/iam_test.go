package cloudtest

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// grants are a function's grants in the shape the deployment gives them.
var grants = []Grant{
	{Actions: []string{"dynamodb:DescribeTable"}, Resource: "table"},
	{Actions: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem",
		"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, Resource: "table", LeadingKeys: []string{"SESSION#*", "RUN#*"}},
	{Actions: []string{"dynamodb:GetItem"}, Resource: "table", LeadingKeys: []string{"KEY#*"}},
	{Actions: []string{"dynamodb:Query"}, Resource: "index/gsi1", LeadingKeys: []string{"TGOUT#*"}},
}

// TestAllows checks how the proxy reads requests and evaluates grants, as
// IAM does.
func TestAllows(t *testing.T) {
	for _, tc := range []struct {
		name, op, body string
		want           bool
	}{
		{"get own", "GetItem", `{"Key":{"pk":{"S":"SESSION#s"},"sk":{"S":"SESSION"}}}`, true},
		{"get other kind", "GetItem", `{"Key":{"pk":{"S":"CONN#c"},"sk":{"S":"CONN"}}}`, false},
		{"read-only kind written", "PutItem", `{"Item":{"pk":{"S":"KEY#h"},"sk":{"S":"KEY"}}}`, false},
		{"prefix is the whole kind", "GetItem", `{"Key":{"pk":{"S":"KEYID#x"},"sk":{"S":"KEYID"}}}`, false},
		{"query own", "Query", `{"KeyConditionExpression":"pk = :pk AND begins_with(sk, :pfx)","ExpressionAttributeValues":{":pk":{"S":"SESSION#s"},":pfx":{"S":"MSG#"}}}`, true},
		{"query index", "Query", `{"IndexName":"gsi1","KeyConditionExpression":"gsi1pk = :pk","ExpressionAttributeValues":{":pk":{"S":"TGOUT#pending"}}}`, true},
		{"query other index partition", "Query", `{"IndexName":"gsi1","KeyConditionExpression":"gsi1pk = :p","ExpressionAttributeValues":{":p":{"S":"UNFINISHED#3"}}}`, false},
		{"query with a name", "Query", `{"KeyConditionExpression":"#k = :v","ExpressionAttributeNames":{"#k":"pk"},"ExpressionAttributeValues":{":v":{"S":"MEM#a"}}}`, false},
		{"scan", "Scan", `{}`, false},
		{"describe", "DescribeTable", `{}`, true},
		{"batch own", "BatchWriteItem", `{"RequestItems":{"t":[{"DeleteRequest":{"Key":{"pk":{"S":"RUN#r"},"sk":{"S":"RUN"}}}},{"PutRequest":{"Item":{"pk":{"S":"SESSION#s"},"sk":{"S":"X"}}}}]}}`, true},
		{"batch with one other", "BatchWriteItem", `{"RequestItems":{"t":[{"DeleteRequest":{"Key":{"pk":{"S":"RUN#r"},"sk":{"S":"RUN"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"APPROVAL#a"},"sk":{"S":"APPROVAL"}}}}]}}`, false},
		{"transaction own", "TransactWriteItems", `{"TransactItems":[{"Put":{"Item":{"pk":{"S":"RUN#r"},"sk":{"S":"RUN"}}}},{"ConditionCheck":{"Key":{"pk":{"S":"SESSION#s"},"sk":{"S":"SESSION"}}}}]}`, true},
		{"transaction writing a read-only kind", "TransactWriteItems", `{"TransactItems":[{"Put":{"Item":{"pk":{"S":"RUN#r"},"sk":{"S":"RUN"}}}},{"Put":{"Item":{"pk":{"S":"KEY#h"},"sk":{"S":"KEY"}}}}]}`, false},
		{"delete the table", "DeleteTable", `{"TableName":"t"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := requests(tc.op, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got := !slices.ContainsFunc(rs, func(r request) bool { return !allows(grants, r) })
			if got != tc.want {
				t.Errorf("%s %s: allowed %v, want %v (requests %v)", tc.op, tc.body, got, tc.want, rs)
			}
		})
	}
}

// TestPoliced sends the store's requests through the proxy: what the
// grants allow works, the rest fails with DynamoDB's AccessDeniedException
// and is reported.
func TestPoliced(t *testing.T) {
	table := NewTable(t)
	var refused []string
	t.Run("requests", func(t *testing.T) {
		ep := table.policed(t, "test", grants, func(d string) { refused = append(refused, d) })
		client := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(ep), Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
		db, err := dynamo.New(t.Context(), dynamo.Config{Table: table.Name, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateSession(t.Context(), store.Session{ID: "s", Agent: "a"}); err != nil {
			t.Errorf("CreateSession: %v", err)
		}
		err = db.PutConnection(t.Context(), "c1", "h", time.Hour)
		if !awsapi.HasCode(err, "AccessDeniedException") {
			t.Errorf("PutConnection: %v, want AccessDeniedException", err)
		}
		if _, err := client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table.Name)}); !awsapi.HasCode(err, "AccessDeniedException") {
			t.Errorf("Scan: %v, want AccessDeniedException", err)
		}
	})
	want := []string{
		"dynamodb:PutItem on table with leading keys [\"CONN#c1\"]",
		"dynamodb:Scan on table with leading keys []",
	}
	if !slices.Equal(refused, want) {
		t.Errorf("refused %q, want %q", refused, want)
	}
}
