package dynamodb

import (
	"context"
	"encoding/json"
	"time"
)

// ScalarAttributeType is the type of a key attribute.
type ScalarAttributeType string

const ScalarAttributeTypeS ScalarAttributeType = "S"

// KeyType is the role of a key attribute.
type KeyType string

const (
	KeyTypeHash  KeyType = "HASH"
	KeyTypeRange KeyType = "RANGE"
)

// BillingMode is how a table's capacity is paid for.
type BillingMode string

const BillingModePayPerRequest BillingMode = "PAY_PER_REQUEST"

// ProjectionType says which attributes an index holds.
type ProjectionType string

const ProjectionTypeAll ProjectionType = "ALL"

// StreamViewType says what a stream's records hold of an item.
type StreamViewType string

const StreamViewTypeNewAndOldImages StreamViewType = "NEW_AND_OLD_IMAGES"

// TableStatus is a table's state.
type TableStatus string

const (
	TableStatusCreating TableStatus = "CREATING"
	TableStatusUpdating TableStatus = "UPDATING"
	TableStatusDeleting TableStatus = "DELETING"
	TableStatusActive   TableStatus = "ACTIVE"
)

// IndexStatus is an index's state.
type IndexStatus string

const IndexStatusActive IndexStatus = "ACTIVE"

// AttributeDefinition declares a key attribute.
type AttributeDefinition struct {
	AttributeName *string
	AttributeType ScalarAttributeType
}

// KeySchemaElement is a key attribute of a table or index.
type KeySchemaElement struct {
	AttributeName *string
	KeyType       KeyType
}

// Projection is what an index holds.
type Projection struct {
	ProjectionType ProjectionType `json:",omitempty"`
}

// GlobalSecondaryIndex is an index CreateTable makes.
type GlobalSecondaryIndex struct {
	IndexName  *string
	KeySchema  []KeySchemaElement
	Projection *Projection
}

// StreamSpecification turns a table's stream on.
type StreamSpecification struct {
	StreamEnabled  *bool
	StreamViewType StreamViewType `json:",omitempty"`
}

// CreateTableInput creates a table.
type CreateTableInput struct {
	TableName              *string
	AttributeDefinitions   []AttributeDefinition
	KeySchema              []KeySchemaElement
	BillingMode            BillingMode            `json:",omitempty"`
	GlobalSecondaryIndexes []GlobalSecondaryIndex `json:",omitempty"`
	StreamSpecification    *StreamSpecification   `json:",omitempty"`
}

// CreateTableOutput is the table created.
type CreateTableOutput struct {
	TableDescription *TableDescription
}

// CreateTable creates a table.
func (c *Client) CreateTable(ctx context.Context, in *CreateTableInput) (*CreateTableOutput, error) {
	return send[CreateTableOutput](ctx, c, "CreateTable", in)
}

// DeleteTableInput deletes a table.
type DeleteTableInput struct {
	TableName *string
}

// DeleteTableOutput is the table deleted.
type DeleteTableOutput struct {
	TableDescription *TableDescription
}

// DeleteTable deletes a table.
func (c *Client) DeleteTable(ctx context.Context, in *DeleteTableInput) (*DeleteTableOutput, error) {
	return send[DeleteTableOutput](ctx, c, "DeleteTable", in)
}

// DescribeTableInput names the table to describe.
type DescribeTableInput struct {
	TableName *string
}

// DescribeTableOutput is the table.
type DescribeTableOutput struct {
	Table *TableDescription
}

// TableDescription is a table as DynamoDB describes it (what lambdaclaw
// reads of it).
type TableDescription struct {
	TableName              *string
	TableArn               *string
	TableStatus            TableStatus
	CreationDateTime       *time.Time
	KeySchema              []KeySchemaElement
	GlobalSecondaryIndexes []GlobalSecondaryIndexDescription
	StreamSpecification    *StreamSpecification
	LatestStreamArn        *string
}

// UnmarshalJSON reads CreationDateTime, which DynamoDB sends in epoch
// seconds.
func (t *TableDescription) UnmarshalJSON(b []byte) error {
	type plain TableDescription
	var w struct {
		plain
		CreationDateTime *float64
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = TableDescription(w.plain)
	if w.CreationDateTime != nil {
		c := epochSeconds(*w.CreationDateTime)
		t.CreationDateTime = &c
	}
	return nil
}

// epochSeconds is the time of f seconds since the epoch, to the
// millisecond, in UTC, as the SDK reads it.
func epochSeconds(f float64) time.Time {
	return time.UnixMilli(int64(f*1000 + 0.5)).UTC()
}

// GlobalSecondaryIndexDescription is an index of a table.
type GlobalSecondaryIndexDescription struct {
	IndexName   *string
	IndexStatus IndexStatus
	KeySchema   []KeySchemaElement
	Projection  *Projection
}

// DescribeTable describes a table.
func (c *Client) DescribeTable(ctx context.Context, in *DescribeTableInput) (*DescribeTableOutput, error) {
	return send[DescribeTableOutput](ctx, c, "DescribeTable", in)
}

// TimeToLiveSpecification turns TTL on an attribute on or off.
type TimeToLiveSpecification struct {
	AttributeName *string
	Enabled       *bool
}

// UpdateTimeToLiveInput sets a table's TTL.
type UpdateTimeToLiveInput struct {
	TableName               *string
	TimeToLiveSpecification *TimeToLiveSpecification
}

// UpdateTimeToLiveOutput is the TTL set.
type UpdateTimeToLiveOutput struct {
	TimeToLiveSpecification *TimeToLiveSpecification
}

// UpdateTimeToLive sets a table's TTL.
func (c *Client) UpdateTimeToLive(ctx context.Context, in *UpdateTimeToLiveInput) (*UpdateTimeToLiveOutput, error) {
	return send[UpdateTimeToLiveOutput](ctx, c, "UpdateTimeToLive", in)
}

// DescribeTimeToLiveInput names the table whose TTL to describe.
type DescribeTimeToLiveInput struct {
	TableName *string
}

// DescribeTimeToLiveOutput is a table's TTL.
type DescribeTimeToLiveOutput struct {
	TimeToLiveDescription *TimeToLiveDescription
}

// TimeToLiveDescription is a table's TTL: its attribute and status
// (ENABLED, ENABLING, DISABLED, …).
type TimeToLiveDescription struct {
	AttributeName    *string
	TimeToLiveStatus string
}

// DescribeTimeToLive describes a table's TTL.
func (c *Client) DescribeTimeToLive(ctx context.Context, in *DescribeTimeToLiveInput) (*DescribeTimeToLiveOutput, error) {
	return send[DescribeTimeToLiveOutput](ctx, c, "DescribeTimeToLive", in)
}
