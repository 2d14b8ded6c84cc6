package dynamodb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// TestAttributeValueJSON: every type of attribute value is sent as
// DynamoDB's JSON says, and read back the same.
func TestAttributeValueJSON(t *testing.T) {
	for _, tc := range []struct {
		v    AttributeValue
		json string
	}{
		{&AttributeValueMemberS{Value: "a\"b"}, `{"S":"a\"b"}`},
		{&AttributeValueMemberN{Value: "-1.5"}, `{"N":"-1.5"}`},
		{&AttributeValueMemberB{Value: []byte{0, 1, 255}}, `{"B":"AAH/"}`},
		{&AttributeValueMemberBOOL{Value: true}, `{"BOOL":true}`},
		{&AttributeValueMemberNULL{Value: true}, `{"NULL":true}`},
		{&AttributeValueMemberSS{Value: []string{"x", "y"}}, `{"SS":["x","y"]}`},
		{&AttributeValueMemberNS{Value: []string{"1", "2"}}, `{"NS":["1","2"]}`},
		{&AttributeValueMemberBS{Value: [][]byte{{1}, {2}}}, `{"BS":["AQ==","Ag=="]}`},
		{&AttributeValueMemberL{Value: []AttributeValue{}}, `{"L":[]}`},
		{&AttributeValueMemberL{Value: []AttributeValue{&AttributeValueMemberS{Value: "s"}, &AttributeValueMemberM{Value: map[string]AttributeValue{"n": &AttributeValueMemberN{Value: "1"}}}}},
			`{"L":[{"S":"s"},{"M":{"n":{"N":"1"}}}]}`},
		{&AttributeValueMemberM{Value: map[string]AttributeValue{}}, `{"M":{}}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", tc.v, b, err, tc.json)
		}
		got, err := decodeValue([]byte(tc.json))
		if err != nil {
			t.Errorf("decode %s: %v", tc.json, err)
		} else if diff := cmp.Diff(tc.v, got); diff != "" {
			t.Errorf("decode %s (-want +got):\n%s", tc.json, diff)
		}
	}
	for _, bad := range []string{`{}`, `{"S":"a","N":"1"}`, `{"X":"a"}`, `{"S":1}`, `{"L":[{"Q":1}]}`, `"a"`} {
		if v, err := decodeValue([]byte(bad)); err == nil {
			t.Errorf("decode %s = %#v, want an error", bad, v)
		}
	}
}

// fake answers each call with answer(op, body), recording the
// operations called; a request DynamoDB's model refuses fails the test.
func fake(t *testing.T, answer func(op string, body []byte, w http.ResponseWriter)) (*Client, *[]string) {
	t.Helper()
	var ops []string
	model := awsmodel.Load(t, "dynamodb")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		op, in, err := model.FromAWSJSON(r.Header.Get("X-Amz-Target"), body)
		if err == nil {
			err = model.Validate(op, in)
		}
		if err != nil {
			t.Errorf("a request DynamoDB refuses: %v", err)
			w.WriteHeader(400)
			return
		}
		ops = append(ops, op)
		answer(op, body, w)
	}))
	t.Cleanup(srv.Close)
	return New(Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}), &ops
}

// TestErrors: a failed condition comes with the old item, a canceled
// transaction with its reasons, and both keep DynamoDB's code.
func TestErrors(t *testing.T) {
	c, _ := fake(t, func(op string, _ []byte, w http.ResponseWriter) {
		w.WriteHeader(400)
		switch op {
		case "PutItem":
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"pk":{"S":"a"},"n":{"N":"3"}}}`)
		case "TransactWriteItems":
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}]}`)
		default:
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`)
		}
	})
	ctx := t.Context()
	_, err := c.PutItem(ctx, &PutItemInput{TableName: aws.String("tbl"), Item: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "a"}}})
	ccf, ok := errors.AsType[*ConditionalCheckFailedException](err)
	if !ok || !awsapi.HasCode(err, "ConditionalCheckFailedException") {
		t.Fatalf("PutItem: %v, want a ConditionalCheckFailedException", err)
	}
	if diff := cmp.Diff(map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "a"}, "n": &AttributeValueMemberN{Value: "3"}}, ccf.Item); diff != "" {
		t.Errorf("the old item (-want +got):\n%s", diff)
	}
	_, err = c.TransactWriteItems(ctx, &TransactWriteItemsInput{TransactItems: []TransactWriteItem{
		{ConditionCheck: &ConditionCheck{TableName: aws.String("tbl"), Key: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "a"}}, ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Delete: &Delete{TableName: aws.String("tbl"), Key: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "b"}}}},
	}})
	tc, ok := errors.AsType[*TransactionCanceledException](err)
	if !ok || !awsapi.HasCode(err, "TransactionCanceledException") {
		t.Fatalf("TransactWriteItems: %v, want a TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tc.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if diff := cmp.Diff([]string{"None", "ConditionalCheckFailed"}, codes); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if _, err := c.DescribeTable(ctx, &DescribeTableInput{TableName: aws.String("tbl")}); !awsapi.HasCode(err, "ResourceNotFoundException") {
		t.Errorf("DescribeTable: %v, want ResourceNotFoundException", err)
	}
}

// TestQueryPaginator reads every page, each from where the last stopped,
// with the same Limit, and stops after the page without a
// LastEvaluatedKey.
func TestQueryPaginator(t *testing.T) {
	var starts []string
	c, ops := fake(t, func(_ string, body []byte, w http.ResponseWriter) {
		var in struct {
			Limit             int
			ExclusiveStartKey struct{ Pk struct{ S string } } `json:"ExclusiveStartKey"`
		}
		json.Unmarshal(body, &in)
		starts = append(starts, fmt.Sprintf("%d:%s", in.Limit, in.ExclusiveStartKey.Pk.S))
		switch len(starts) {
		case 1:
			fmt.Fprint(w, `{"Items":[{"Pk":{"S":"a"}}],"Count":1,"LastEvaluatedKey":{"Pk":{"S":"a"}}}`)
		case 2:
			fmt.Fprint(w, `{"Items":[{"Pk":{"S":"b"}}],"Count":1,"LastEvaluatedKey":{"Pk":{"S":"b"}}}`)
		default:
			fmt.Fprint(w, `{"Items":[],"Count":0}`)
		}
	})
	p := NewQueryPaginator(c, &QueryInput{TableName: aws.String("tbl"), Limit: aws.Int32(1)})
	var got []string
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			got = append(got, it["Pk"].(*AttributeValueMemberS).Value)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1:", "1:a", "1:b"}, starts); diff != "" || len(*ops) != 3 {
		t.Errorf("pages started at (-want +got):\n%s", diff)
	}
}

// TestBatchUnprocessed: the writes and reads DynamoDB left undone come
// back to be sent again.
func TestBatchUnprocessed(t *testing.T) {
	c, _ := fake(t, func(op string, _ []byte, w http.ResponseWriter) {
		if op == "BatchWriteItem" {
			fmt.Fprint(w, `{"UnprocessedItems":{"t":[{"DeleteRequest":{"Key":{"pk":{"S":"x"}}}},{"PutRequest":{"Item":{"pk":{"S":"y"}}}}]}}`)
			return
		}
		fmt.Fprint(w, `{"Responses":{"t":[{"pk":{"S":"a"}}]},"UnprocessedKeys":{"t":{"Keys":[{"pk":{"S":"b"}}],"ConsistentRead":true}}}`)
	})
	w, err := c.BatchWriteItem(t.Context(), &BatchWriteItemInput{RequestItems: map[string][]WriteRequest{"tbl": {
		{PutRequest: &PutRequest{Item: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "y"}, "l": &AttributeValueMemberL{Value: []AttributeValue{&AttributeValueMemberNULL{Value: true}}}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]WriteRequest{"t": {
		{DeleteRequest: &DeleteRequest{Key: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "x"}}}},
		{PutRequest: &PutRequest{Item: map[string]AttributeValue{"pk": &AttributeValueMemberS{Value: "y"}}}},
	}}
	if diff := cmp.Diff(want, w.UnprocessedItems); diff != "" {
		t.Errorf("unprocessed items (-want +got):\n%s", diff)
	}
	g, err := c.BatchGetItem(t.Context(), &BatchGetItemInput{RequestItems: map[string]KeysAndAttributes{"tbl": {Keys: []map[string]AttributeValue{{"pk": &AttributeValueMemberS{Value: "a"}}}, ConsistentRead: aws.Bool(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	wantG := &BatchGetItemOutput{
		Responses:       map[string][]map[string]AttributeValue{"t": {{"pk": &AttributeValueMemberS{Value: "a"}}}},
		UnprocessedKeys: map[string]KeysAndAttributes{"t": {Keys: []map[string]AttributeValue{{"pk": &AttributeValueMemberS{Value: "b"}}}, ConsistentRead: aws.Bool(true)}},
	}
	if diff := cmp.Diff(wantG, g); diff != "" {
		t.Errorf("BatchGetItem (-want +got):\n%s", diff)
	}
}

// TestNoRegion: a client without a Region says so at its first call.
func TestNoRegion(t *testing.T) {
	_, err := New(Options{}).GetItem(t.Context(), &GetItemInput{})
	if err == nil || !strings.Contains(err.Error(), "no AWS Region") {
		t.Errorf("GetItem: %v, want no AWS Region", err)
	}
}
