package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Connections of the API Gateway WebSocket API. API Gateway authenticates
// nothing after $connect: the later events of a connection carry only its
// id. The ws function therefore records, at $connect, which API key opened
// the connection, and looks it up for every message.
const (
	pfxConn = "CONN#"
	skConn  = "CONN"
)

// PutConnection records that the WebSocket connection id was opened with
// the API key whose hash is keyHash. The record expires ttl from now; API
// Gateway closes a connection after two hours at most.
func (s *Store) PutConnection(ctx context.Context, id, keyHash string, ttl time.Duration) error {
	if id == "" || keyHash == "" || ttl <= 0 {
		return errors.New("dynamo: put connection: need an id, a key hash and a positive ttl")
	}
	it := key(pfxConn+id, skConn)
	it["key_hash"] = attrS(keyHash)
	it[attrExpiresAt] = attrN(s.now().Add(ttl).Unix())
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: it}); err != nil {
		return fmt.Errorf("dynamo: put connection %q: %w", id, err)
	}
	return nil
}

// ConnectionKey returns the hash of the API key connection id was opened
// with, or store.ErrNotFound for a connection that is unknown, closed or
// expired.
func (s *Store) ConnectionKey(ctx context.Context, id string) (string, error) {
	it, err := s.getItem(ctx, key(pfxConn+id, skConn))
	if err != nil {
		return "", fmt.Errorf("dynamo: get connection %q: %w", id, err)
	}
	// TTL deletes lazily: an expired item may still be there.
	if it == nil || getN(it, attrExpiresAt) <= s.now().Unix() {
		return "", store.ErrNotFound
	}
	return getS(it, "key_hash"), nil
}

// DeleteConnection forgets a closed connection; an unknown one is no error.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(pfxConn+id, skConn)}); err != nil {
		return fmt.Errorf("dynamo: delete connection %q: %w", id, err)
	}
	return nil
}
