// Package dynamodb is a lean client of DynamoDB (awsJson 1.0, target
// DynamoDB_20120810) and of DynamoDB Streams, through package awsapi: the
// operations lambdaclaw calls, with input, output and attribute-value
// types shaped as the SDK's (service/dynamodb and its types), so that
// code written for the SDK's client reads the same. It costs a fraction
// of the SDK's client in code and none of its init work.
//
// An error DynamoDB answers is an *awsapi.Error (awsapi.Code, HasCode);
// ConditionalCheckFailedException and TransactionCanceledException come
// as the types of those names, which wrap it and add the old item and the
// cancellation reasons. Requests are retried as the SDK's standard
// retryer retries them (throttling, ProvisionedThroughputExceeded, 5xx),
// and an answer whose body is not the CRC32 it came with is retried too.
package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
)

// Options configures a Client.
type Options struct {
	// BaseEndpoint overrides the Region's endpoint (DynamoDB Local).
	BaseEndpoint *string
	Region       string
	Credentials  aws.CredentialsProvider
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient aws.HTTPClient
	// RetryMaxAttempts bounds the attempts of a request; the SDK's
	// default (3) when zero.
	RetryMaxAttempts int
}

// Client calls DynamoDB.
type Client struct {
	api *awsapi.JSON
	// err is why the client cannot call (no Region, a bad endpoint),
	// returned by every call as the SDK's client does.
	err error
}

// New returns a client with o.
func New(o Options) *Client {
	return newClient(aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: o.HTTPClient,
		RetryMaxAttempts: o.RetryMaxAttempts}, aws.ToString(o.BaseEndpoint), awsapi.NewDynamoDB)
}

// NewFromConfig returns a client of cfg (its credentials, Region,
// HTTP client, retry attempts and BaseEndpoint); endpoint, when not
// empty, overrides the endpoint.
func NewFromConfig(cfg aws.Config, endpoint string) *Client {
	return newClient(cfg, endpoint, awsapi.NewDynamoDB)
}

func newClient(cfg aws.Config, endpoint string, dial func(aws.Config, string) (*awsapi.JSON, error)) *Client {
	api, err := dial(cfg, endpoint)
	return &Client{api: api, err: err}
}

// call calls op, and turns DynamoDB's errors with more to say into their
// types.
func (c *Client) call(ctx context.Context, op string, in, out any) error {
	if c.err != nil {
		return c.err
	}
	err := c.api.Call(ctx, op, in, out)
	e, ok := errors.AsType[*awsapi.Error](err)
	if !ok {
		return err
	}
	switch e.Code {
	case "ConditionalCheckFailedException":
		var b struct{ Item item }
		_ = json.Unmarshal(e.Body, &b) // a body without the item leaves it nil
		return &ConditionalCheckFailedException{Err: e, Item: b.Item}
	case "TransactionCanceledException":
		var b struct{ CancellationReasons []cancellationReason }
		_ = json.Unmarshal(e.Body, &b)
		t := &TransactionCanceledException{Err: e}
		for _, r := range b.CancellationReasons {
			t.CancellationReasons = append(t.CancellationReasons, CancellationReason{Code: r.Code, Message: r.Message, Item: r.Item})
		}
		return t
	}
	return err
}

// write calls op, a write of an item, and returns the Attributes it
// answers.
func (c *Client) write(ctx context.Context, op string, in any) (map[string]AttributeValue, error) {
	var out struct{ Attributes item }
	err := c.call(ctx, op, in, &out)
	return out.Attributes, err
}

// send calls op and returns its answer, decoded into a T.
func send[T any](ctx context.Context, c *Client, op string, in any) (*T, error) {
	var out T
	if err := c.call(ctx, op, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ConditionalCheckFailedException is a write whose condition failed;
// Item is the item as it was, when the write asked for it
// (ReturnValuesOnConditionCheckFailure ALL_OLD).
type ConditionalCheckFailedException struct {
	Err  *awsapi.Error
	Item map[string]AttributeValue
}

func (e *ConditionalCheckFailedException) Error() string { return e.Err.Error() }
func (e *ConditionalCheckFailedException) Unwrap() error { return e.Err }

// TransactionCanceledException is a transaction canceled: a reason for
// each of its items, in their order (Code None for those that were fine).
type TransactionCanceledException struct {
	Err                 *awsapi.Error
	CancellationReasons []CancellationReason
}

func (e *TransactionCanceledException) Error() string { return e.Err.Error() }
func (e *TransactionCanceledException) Unwrap() error { return e.Err }

// CancellationReason is why an item of a transaction was not written:
// Code ConditionalCheckFailed, TransactionConflict, None, ….
type CancellationReason struct {
	Code, Message *string
	Item          map[string]AttributeValue
}

type cancellationReason struct {
	Code, Message *string
	Item          item
}

// ReturnValue says what a write answers of the item.
type ReturnValue string

const (
	ReturnValueNone       ReturnValue = "NONE"
	ReturnValueAllOld     ReturnValue = "ALL_OLD"
	ReturnValueUpdatedOld ReturnValue = "UPDATED_OLD"
	ReturnValueAllNew     ReturnValue = "ALL_NEW"
	ReturnValueUpdatedNew ReturnValue = "UPDATED_NEW"
)

// ReturnValuesOnConditionCheckFailure says whether a failed condition
// answers the item as it was.
type ReturnValuesOnConditionCheckFailure string

const (
	ReturnValuesOnConditionCheckFailureAllOld ReturnValuesOnConditionCheckFailure = "ALL_OLD"
	ReturnValuesOnConditionCheckFailureNone   ReturnValuesOnConditionCheckFailure = "NONE"
)

// Select says what a Query or Scan answers.
type Select string

const (
	SelectAllAttributes Select = "ALL_ATTRIBUTES"
	SelectCount         Select = "COUNT"
)

// GetItemInput reads an item by key.
type GetItemInput struct {
	TableName                *string                   `json:",omitempty"`
	Key                      map[string]AttributeValue `json:",omitempty"`
	ConsistentRead           *bool                     `json:",omitempty"`
	ProjectionExpression     *string                   `json:",omitempty"`
	ExpressionAttributeNames map[string]string         `json:",omitempty"`
}

// GetItemOutput is the item; nil when there is none.
type GetItemOutput struct {
	Item map[string]AttributeValue
}

// GetItem reads an item.
func (c *Client) GetItem(ctx context.Context, in *GetItemInput) (*GetItemOutput, error) {
	var out struct{ Item item }
	if err := c.call(ctx, "GetItem", in, &out); err != nil {
		return nil, err
	}
	return &GetItemOutput{Item: out.Item}, nil
}

// PutItemInput writes an item whole.
type PutItemInput struct {
	TableName                           *string                             `json:",omitempty"`
	Item                                map[string]AttributeValue           `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValues                        ReturnValue                         `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// PutItemOutput is the item as it was, when asked for (ALL_OLD).
type PutItemOutput struct {
	Attributes map[string]AttributeValue
}

// PutItem writes an item.
func (c *Client) PutItem(ctx context.Context, in *PutItemInput) (*PutItemOutput, error) {
	a, err := c.write(ctx, "PutItem", in)
	if err != nil {
		return nil, err
	}
	return &PutItemOutput{Attributes: a}, nil
}

// UpdateItemInput changes attributes of an item, creating it if need be.
type UpdateItemInput struct {
	TableName                           *string                             `json:",omitempty"`
	Key                                 map[string]AttributeValue           `json:",omitempty"`
	UpdateExpression                    *string                             `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValues                        ReturnValue                         `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// UpdateItemOutput is what ReturnValues asked for of the item.
type UpdateItemOutput struct {
	Attributes map[string]AttributeValue
}

// UpdateItem changes an item.
func (c *Client) UpdateItem(ctx context.Context, in *UpdateItemInput) (*UpdateItemOutput, error) {
	a, err := c.write(ctx, "UpdateItem", in)
	if err != nil {
		return nil, err
	}
	return &UpdateItemOutput{Attributes: a}, nil
}

// DeleteItemInput deletes an item by key.
type DeleteItemInput struct {
	TableName                           *string                             `json:",omitempty"`
	Key                                 map[string]AttributeValue           `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValues                        ReturnValue                         `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// DeleteItemOutput is the item deleted, when asked for (ALL_OLD).
type DeleteItemOutput struct {
	Attributes map[string]AttributeValue
}

// DeleteItem deletes an item.
func (c *Client) DeleteItem(ctx context.Context, in *DeleteItemInput) (*DeleteItemOutput, error) {
	a, err := c.write(ctx, "DeleteItem", in)
	if err != nil {
		return nil, err
	}
	return &DeleteItemOutput{Attributes: a}, nil
}

// QueryInput reads the items of a partition (of the table or an index).
type QueryInput struct {
	TableName                 *string                   `json:",omitempty"`
	IndexName                 *string                   `json:",omitempty"`
	KeyConditionExpression    *string                   `json:",omitempty"`
	FilterExpression          *string                   `json:",omitempty"`
	ProjectionExpression      *string                   `json:",omitempty"`
	ExpressionAttributeNames  map[string]string         `json:",omitempty"`
	ExpressionAttributeValues map[string]AttributeValue `json:",omitempty"`
	ExclusiveStartKey         map[string]AttributeValue `json:",omitempty"`
	Limit                     *int32                    `json:",omitempty"`
	ScanIndexForward          *bool                     `json:",omitempty"`
	ConsistentRead            *bool                     `json:",omitempty"`
	Select                    Select                    `json:",omitempty"`
}

// QueryOutput is a page of a Query or Scan: its items, how many, and
// the key to go on from (none after the last page).
type QueryOutput struct {
	Items            []map[string]AttributeValue
	Count            int32
	ScannedCount     int32
	LastEvaluatedKey map[string]AttributeValue
}

// page is a QueryOutput or ScanOutput as DynamoDB sends it.
// Its items are wires, read in one pass of the page (see wire).
type page struct {
	Items            []map[string]wire
	Count            int32
	ScannedCount     int32
	LastEvaluatedKey item
}

// page calls op, a Query or Scan, and returns its page.
func (c *Client) page(ctx context.Context, op string, in any) (*QueryOutput, error) {
	var out page
	if err := c.call(ctx, op, in, &out); err != nil {
		return nil, err
	}
	its, err := fromWires(out.Items)
	if err != nil {
		return nil, fmt.Errorf("DynamoDB %s: the answer: %w", op, err)
	}
	return &QueryOutput{Items: its, Count: out.Count, ScannedCount: out.ScannedCount, LastEvaluatedKey: out.LastEvaluatedKey}, nil
}

// Query reads a page of items.
func (c *Client) Query(ctx context.Context, in *QueryInput) (*QueryOutput, error) {
	return c.page(ctx, "Query", in)
}

// ScanInput reads every item of a table.
type ScanInput struct {
	TableName                 *string                   `json:",omitempty"`
	IndexName                 *string                   `json:",omitempty"`
	FilterExpression          *string                   `json:",omitempty"`
	ProjectionExpression      *string                   `json:",omitempty"`
	ExpressionAttributeNames  map[string]string         `json:",omitempty"`
	ExpressionAttributeValues map[string]AttributeValue `json:",omitempty"`
	ExclusiveStartKey         map[string]AttributeValue `json:",omitempty"`
	Limit                     *int32                    `json:",omitempty"`
	ConsistentRead            *bool                     `json:",omitempty"`
	Select                    Select                    `json:",omitempty"`
}

// ScanOutput is a page of a Scan.
type ScanOutput = QueryOutput

// Scan reads a page of a table's items.
func (c *Client) Scan(ctx context.Context, in *ScanInput) (*ScanOutput, error) {
	return c.page(ctx, "Scan", in)
}

// KeysAndAttributes are the keys BatchGetItem reads of a table.
type KeysAndAttributes struct {
	Keys                     []map[string]AttributeValue
	ConsistentRead           *bool             `json:",omitempty"`
	ProjectionExpression     *string           `json:",omitempty"`
	ExpressionAttributeNames map[string]string `json:",omitempty"`
}

// BatchGetItemInput reads up to 100 items by key.
type BatchGetItemInput struct {
	RequestItems map[string]KeysAndAttributes
}

// BatchGetItemOutput is the items read, by table, and the keys left
// unread (read them again).
type BatchGetItemOutput struct {
	Responses       map[string][]map[string]AttributeValue
	UnprocessedKeys map[string]KeysAndAttributes
}

// BatchGetItem reads items by key.
func (c *Client) BatchGetItem(ctx context.Context, in *BatchGetItemInput) (*BatchGetItemOutput, error) {
	var out struct {
		Responses       map[string]items
		UnprocessedKeys map[string]struct {
			Keys                     items
			ConsistentRead           *bool
			ProjectionExpression     *string
			ExpressionAttributeNames map[string]string
		}
	}
	if err := c.call(ctx, "BatchGetItem", in, &out); err != nil {
		return nil, err
	}
	res := &BatchGetItemOutput{Responses: map[string][]map[string]AttributeValue{}}
	for t, its := range out.Responses {
		res.Responses[t] = its
	}
	for t, k := range out.UnprocessedKeys {
		if res.UnprocessedKeys == nil {
			res.UnprocessedKeys = map[string]KeysAndAttributes{}
		}
		res.UnprocessedKeys[t] = KeysAndAttributes{Keys: k.Keys, ConsistentRead: k.ConsistentRead,
			ProjectionExpression: k.ProjectionExpression, ExpressionAttributeNames: k.ExpressionAttributeNames}
	}
	return res, nil
}

// WriteRequest is a put or a delete of a BatchWriteItem.
type WriteRequest struct {
	PutRequest    *PutRequest    `json:",omitempty"`
	DeleteRequest *DeleteRequest `json:",omitempty"`
}

// PutRequest puts an item.
type PutRequest struct {
	Item map[string]AttributeValue
}

// DeleteRequest deletes an item by key.
type DeleteRequest struct {
	Key map[string]AttributeValue
}

// BatchWriteItemInput writes up to 25 items, by table.
type BatchWriteItemInput struct {
	RequestItems map[string][]WriteRequest
}

// BatchWriteItemOutput is the writes left undone, by table (send them
// again).
type BatchWriteItemOutput struct {
	UnprocessedItems map[string][]WriteRequest
}

// BatchWriteItem writes items.
func (c *Client) BatchWriteItem(ctx context.Context, in *BatchWriteItemInput) (*BatchWriteItemOutput, error) {
	var out struct {
		UnprocessedItems map[string][]struct {
			PutRequest    *struct{ Item item }
			DeleteRequest *struct{ Key item }
		}
	}
	if err := c.call(ctx, "BatchWriteItem", in, &out); err != nil {
		return nil, err
	}
	res := &BatchWriteItemOutput{}
	for t, reqs := range out.UnprocessedItems {
		if res.UnprocessedItems == nil {
			res.UnprocessedItems = map[string][]WriteRequest{}
		}
		for _, r := range reqs {
			var w WriteRequest
			if r.PutRequest != nil {
				w.PutRequest = &PutRequest{Item: r.PutRequest.Item}
			}
			if r.DeleteRequest != nil {
				w.DeleteRequest = &DeleteRequest{Key: r.DeleteRequest.Key}
			}
			res.UnprocessedItems[t] = append(res.UnprocessedItems[t], w)
		}
	}
	return res, nil
}

// TransactWriteItem is one write of a transaction.
type TransactWriteItem struct {
	ConditionCheck *ConditionCheck `json:",omitempty"`
	Put            *Put            `json:",omitempty"`
	Update         *Update         `json:",omitempty"`
	Delete         *Delete         `json:",omitempty"`
}

// ConditionCheck checks a condition on an item it does not write.
type ConditionCheck struct {
	TableName                           *string                             `json:",omitempty"`
	Key                                 map[string]AttributeValue           `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// Put puts an item in a transaction.
type Put struct {
	TableName                           *string                             `json:",omitempty"`
	Item                                map[string]AttributeValue           `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// Update changes an item in a transaction.
type Update struct {
	TableName                           *string                             `json:",omitempty"`
	Key                                 map[string]AttributeValue           `json:",omitempty"`
	UpdateExpression                    *string                             `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// Delete deletes an item in a transaction.
type Delete struct {
	TableName                           *string                             `json:",omitempty"`
	Key                                 map[string]AttributeValue           `json:",omitempty"`
	ConditionExpression                 *string                             `json:",omitempty"`
	ExpressionAttributeNames            map[string]string                   `json:",omitempty"`
	ExpressionAttributeValues           map[string]AttributeValue           `json:",omitempty"`
	ReturnValuesOnConditionCheckFailure ReturnValuesOnConditionCheckFailure `json:",omitempty"`
}

// TransactWriteItemsInput writes up to 100 items, all or none.
type TransactWriteItemsInput struct {
	TransactItems      []TransactWriteItem
	ClientRequestToken *string `json:",omitempty"`
}

// TransactWriteItemsOutput says nothing lambdaclaw reads.
type TransactWriteItemsOutput struct{}

// TransactWriteItems writes items in a transaction; a canceled one is a
// *TransactionCanceledException.
func (c *Client) TransactWriteItems(ctx context.Context, in *TransactWriteItemsInput) (*TransactWriteItemsOutput, error) {
	if err := c.call(ctx, "TransactWriteItems", in, nil); err != nil {
		return nil, err
	}
	return &TransactWriteItemsOutput{}, nil
}

// QueryAPIClient is what a QueryPaginator queries.
type QueryAPIClient interface {
	Query(ctx context.Context, in *QueryInput) (*QueryOutput, error)
}

// QueryPaginator reads a Query page after page, as the SDK's does: each
// page from the LastEvaluatedKey of the one before, with the same Limit,
// until a page has none.
type QueryPaginator = paginator[QueryInput]

// ScanPaginator reads a Scan page after page.
type ScanPaginator = paginator[ScanInput]

// NewQueryPaginator returns a paginator of the Query in.
func NewQueryPaginator(client QueryAPIClient, in *QueryInput) *QueryPaginator {
	return &QueryPaginator{read: client.Query, params: *in, next: in.ExclusiveStartKey, first: true,
		from: func(in *QueryInput, k map[string]AttributeValue) { in.ExclusiveStartKey = k }}
}

// NewScanPaginator returns a paginator of the Scan in.
func NewScanPaginator(client *Client, in *ScanInput) *ScanPaginator {
	return &ScanPaginator{read: client.Scan, params: *in, next: in.ExclusiveStartKey, first: true,
		from: func(in *ScanInput, k map[string]AttributeValue) { in.ExclusiveStartKey = k }}
}

// paginator reads the pages of a Query or Scan In.
type paginator[In any] struct {
	read   func(context.Context, *In) (*QueryOutput, error)
	params In
	// from sets where a page starts.
	from  func(*In, map[string]AttributeValue)
	next  map[string]AttributeValue
	first bool
}

// HasMorePages reports whether there is a page to read.
func (p *paginator[In]) HasMorePages() bool { return p.first || len(p.next) > 0 }

// NextPage reads the next page.
func (p *paginator[In]) NextPage(ctx context.Context) (*QueryOutput, error) {
	in := p.params
	p.from(&in, p.next)
	out, err := p.read(ctx, &in)
	if err != nil {
		return nil, err
	}
	p.first = false
	p.next = out.LastEvaluatedKey
	return out, nil
}
