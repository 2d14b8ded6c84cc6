package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CreateResponse stores r unless its id exists in any session
// (store.ErrExists). The session must exist (store.ErrNotFound). The
// response and its index in the session's partition, by which
// DeleteSession finds it, are written in one transaction that also checks
// the session. A zero CreatedAt is set to now; a response over DynamoDB's
// item limit is refused with ErrItemTooLarge.
func (s *Store) CreateResponse(ctx context.Context, r store.Response) error {
	now := s.now()
	r.CreatedAt = orNow(r.CreatedAt, now)
	it := s.stamp(responseItem(r), now)
	if err := checkSize(fmt.Sprintf("response %q", r.ID), it); err != nil {
		return err
	}
	index := s.stamp(key(sessionPK(r.SessionID), pfxRespIdx+r.ID), now)
	index["response_id"] = attrS(r.ID)
	if err := s.createInSession(ctx, it, r.SessionID, index); err != nil {
		return fmt.Errorf("dynamo: create response %q: %w", r.ID, err)
	}
	return nil
}

// responseItem encodes a response; the request is kept as bytes (B), as
// given.
func responseItem(r store.Response) item {
	it := key(pfxResponse+r.ID, skResponse)
	it["id"] = attrS(r.ID)
	it["owner"] = attrS(r.Owner)
	it["agent"] = attrS(r.Agent)
	it["session_id"] = attrS(r.SessionID)
	it["run_id"] = attrS(r.RunID)
	it["seq"] = attrN(r.Seq)
	if r.PreviousID != "" {
		it["previous_id"] = attrS(r.PreviousID)
	}
	if len(r.Request) > 0 {
		it["request"] = &dynamodb.AttributeValueMemberB{Value: r.Request}
	}
	it["created_at"] = attrTime(r.CreatedAt)
	return it
}

// decodeResponse is the inverse of responseItem.
func decodeResponse(it item) store.Response {
	return store.Response{
		ID:         getS(it, "id"),
		Owner:      getS(it, "owner"),
		Agent:      getS(it, "agent"),
		SessionID:  getS(it, "session_id"),
		RunID:      getS(it, "run_id"),
		Seq:        getN(it, "seq"),
		PreviousID: getS(it, "previous_id"),
		Request:    getB(it, "request"),
		CreatedAt:  getTime(it, "created_at"),
	}
}

// GetResponse returns a response by id with one strongly consistent read,
// or store.ErrNotFound.
func (s *Store) GetResponse(ctx context.Context, id string) (store.Response, error) {
	it, err := s.getItem(ctx, key(pfxResponse+id, skResponse))
	if err != nil {
		return store.Response{}, fmt.Errorf("dynamo: get response %q: %w", id, err)
	}
	if it == nil {
		return store.Response{}, fmt.Errorf("dynamo: get response %q: %w", id, store.ErrNotFound)
	}
	return decodeResponse(it), nil
}

// DeleteResponse reads a response for its session, then deletes it and
// its index in the session's partition in one transaction, conditional on
// the response still being there in that session. It is store.ErrNotFound
// when there is none, also when a concurrent delete took it first.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	it, err := s.getItem(ctx, key(pfxResponse+id, skResponse))
	if err != nil {
		return fmt.Errorf("dynamo: delete response %q: %w", id, err)
	}
	if it == nil {
		return fmt.Errorf("dynamo: delete response %q: %w", id, store.ErrNotFound)
	}
	sid := getS(it, "session_id")
	err = s.transact(ctx, []dynamodb.TransactWriteItem{
		{Delete: &dynamodb.Delete{
			TableName:                 s.table,
			Key:                       key(pfxResponse+id, skResponse),
			ConditionExpression:       aws.String("session_id = :sid"),
			ExpressionAttributeValues: item{":sid": attrS(sid)},
		}},
		{Delete: &dynamodb.Delete{TableName: s.table, Key: key(sessionPK(sid), pfxRespIdx+id)}},
	})
	if failed, ok := canceledAt(err); ok && len(failed) > 0 && failed[0] {
		return fmt.Errorf("dynamo: delete response %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete response %q: %w", id, err)
	}
	return nil
}
