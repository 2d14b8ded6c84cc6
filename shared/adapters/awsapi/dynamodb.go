package awsapi

import (
	"context"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// JSON is a client of an awsJson service whose operations and types
// another package declares: DynamoDB and DynamoDB Streams, typed in
// package awsapi/dynamodb.
type JSON struct{ c *Client }

var (
	dynamoDB        = Service{Name: "DynamoDB", Prefix: "dynamodb", Signing: "dynamodb", protocol: awsJSON, target: "DynamoDB_20120810", jsonVersion: "1.0", crc32: true}
	dynamoDBStreams = Service{Name: "DynamoDB Streams", Prefix: "streams.dynamodb", Signing: "dynamodb", protocol: awsJSON, target: "DynamoDBStreams_20120810", jsonVersion: "1.0", crc32: true}
)

// NewDynamoDB returns a DynamoDB client of cfg; endpoint, when not
// empty, overrides cfg.BaseEndpoint and the Region's.
func NewDynamoDB(cfg aws.Config, endpoint string) (*JSON, error) {
	c, err := newClient(cfg, dynamoDB, endpoint)
	return &JSON{c}, err
}

// NewDynamoDBStreams returns a DynamoDB Streams client of cfg; endpoint,
// when not empty, overrides cfg.BaseEndpoint and the Region's.
func NewDynamoDBStreams(cfg aws.Config, endpoint string) (*JSON, error) {
	c, err := newClient(cfg, dynamoDBStreams, endpoint)
	return &JSON{c}, err
}

// Call calls op with in as its JSON body and decodes the answer into out
// (when not nil).
func (j *JSON) Call(ctx context.Context, op string, in, out any) error {
	return j.c.callJSON(ctx, op, in, out)
}

// checkCRC32 checks body against the CRC32 DynamoDB sends of it in
// X-Amz-Crc32, as the SDK's DynamoDB client does: a mismatch is an
// answer damaged on its way, retried.
func checkCRC32(svc Service, op string, status int, want string, body []byte) error {
	if want == "" {
		return nil
	}
	n, err := strconv.ParseUint(want, 10, 32)
	if err != nil || uint32(n) != crc32.ChecksumIEEE(body) {
		return &connError{fmt.Errorf("%s %s: the answer's CRC32 is not its X-Amz-Crc32 %s", svc.Name, op, want), status}
	}
	return nil
}
