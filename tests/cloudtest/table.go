package cloudtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
)

// Table is a fresh table in DynamoDB Local.
type Table struct {
	// Endpoint is DynamoDB Local's, from DYNAMODB_ENDPOINT.
	Endpoint string
	Name     string
	// Client reaches Endpoint with the static credentials local/local in
	// us-east-1.
	Client *dynamodb.Client
	// Store is the table's store.
	Store *dynamo.Store
}

// NewTable creates a table with a unique name and the deployment's schema
// (dynamo.CreateTable) in DynamoDB Local, deleted when the test ends.
// Without DYNAMODB_ENDPOINT the test fails, unless
// LAMBDACLAW_SKIP_DYNAMODB=1 skips it.
func NewTable(t *testing.T) *Table {
	t.Helper()
	endpoint := os.Getenv("DYNAMODB_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("LAMBDACLAW_SKIP_DYNAMODB") == "1" {
			t.Skip("LAMBDACLAW_SKIP_DYNAMODB=1: DynamoDB Local tests skipped")
		}
		t.Fatal("DYNAMODB_ENDPOINT is not set: run these tests through `make test`, which starts DynamoDB Local " +
			"(tests/dynamodb-local.sh run go test ./...), or set LAMBDACLAW_SKIP_DYNAMODB=1 to skip them")
	}
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	b := make([]byte, 6)
	rand.Read(b)
	name := "lambdaclaw-test-" + hex.EncodeToString(b)
	if err := dynamo.CreateTable(t.Context(), client, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("DeleteTable %s: %v", name, err)
		}
	})
	db, err := dynamo.New(t.Context(), dynamo.Config{Table: name, Client: client})
	if err != nil {
		t.Fatalf("dynamo.New: %v", err)
	}
	return &Table{Endpoint: endpoint, Name: name, Client: client, Store: db}
}
