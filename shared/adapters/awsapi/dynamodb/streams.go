package dynamodb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
)

// StreamsClient calls DynamoDB Streams (target DynamoDBStreams_20120810).
type StreamsClient struct{ c *Client }

// NewStreams returns a DynamoDB Streams client with o.
func NewStreams(o Options) *StreamsClient {
	return &StreamsClient{newClient(aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: o.HTTPClient,
		RetryMaxAttempts: o.RetryMaxAttempts}, aws.ToString(o.BaseEndpoint), awsapi.NewDynamoDBStreams)}
}

// DescribeStreamInput names the stream to describe.
type DescribeStreamInput struct {
	StreamArn *string
}

// DescribeStreamOutput is the stream.
type DescribeStreamOutput struct {
	StreamDescription *StreamDescription
}

// StreamDescription is a stream and its shards.
type StreamDescription struct {
	StreamArn *string
	Shards    []Shard
}

// Shard is a shard of a stream.
type Shard struct {
	ShardId       *string
	ParentShardId *string
}

// DescribeStream describes a stream.
func (c *StreamsClient) DescribeStream(ctx context.Context, in *DescribeStreamInput) (*DescribeStreamOutput, error) {
	return send[DescribeStreamOutput](ctx, c.c, "DescribeStream", in)
}

// ShardIteratorType says where a shard iterator starts.
type ShardIteratorType string

const ShardIteratorTypeTrimHorizon ShardIteratorType = "TRIM_HORIZON"

// GetShardIteratorInput asks for an iterator of a shard.
type GetShardIteratorInput struct {
	StreamArn         *string
	ShardId           *string
	ShardIteratorType ShardIteratorType
}

// GetShardIteratorOutput is the iterator.
type GetShardIteratorOutput struct {
	ShardIterator *string
}

// GetShardIterator returns an iterator of a shard.
func (c *StreamsClient) GetShardIterator(ctx context.Context, in *GetShardIteratorInput) (*GetShardIteratorOutput, error) {
	return send[GetShardIteratorOutput](ctx, c.c, "GetShardIterator", in)
}

// GetRecordsInput reads records from an iterator.
type GetRecordsInput struct {
	ShardIterator *string
	Limit         *int32 `json:",omitempty"`
}

// GetRecordsOutput is the records read and the iterator to go on with.
type GetRecordsOutput struct {
	Records           []Record
	NextShardIterator *string
}

// Record is a change of an item.
type Record struct {
	EventID, EventSource, AwsRegion *string
	// EventName is INSERT, MODIFY or REMOVE.
	EventName string
	Dynamodb  *StreamRecord
}

// StreamRecord is what a record holds of the item.
type StreamRecord struct {
	Keys, NewImage, OldImage map[string]AttributeValue
	SequenceNumber           *string
	StreamViewType           StreamViewType
}

// GetRecords reads records.
func (c *StreamsClient) GetRecords(ctx context.Context, in *GetRecordsInput) (*GetRecordsOutput, error) {
	var out struct {
		Records []struct {
			EventID, EventSource, AwsRegion *string
			EventName                       string
			Dynamodb                        *struct {
				Keys, NewImage, OldImage item
				SequenceNumber           *string
				StreamViewType           StreamViewType
			}
		}
		NextShardIterator *string
	}
	if err := c.c.call(ctx, "GetRecords", in, &out); err != nil {
		return nil, err
	}
	res := &GetRecordsOutput{NextShardIterator: out.NextShardIterator}
	for _, r := range out.Records {
		rec := Record{EventID: r.EventID, EventSource: r.EventSource, AwsRegion: r.AwsRegion, EventName: r.EventName}
		if d := r.Dynamodb; d != nil {
			rec.Dynamodb = &StreamRecord{Keys: d.Keys, NewImage: d.NewImage, OldImage: d.OldImage,
				SequenceNumber: d.SequenceNumber, StreamViewType: d.StreamViewType}
		}
		res.Records = append(res.Records, rec)
	}
	return res, nil
}
