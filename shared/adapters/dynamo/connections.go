package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Connections of the API Gateway WebSocket API. API Gateway authenticates
// nothing after $connect: the later events of a connection carry only its
// id. The ws function therefore records, at $connect, which API key opened
// the connection, and looks it up for every message.
//
// The index of connections by user, which delivers scheduled check-ins to
// a WebSocket user (ws:<user>), lives in partitions WSUSER#<owner>#<sid>:
// one item CONN#<id> per connection in which the owner's user talks in
// session sid (JoinSession, when a message of the connection is
// delivered). The owner is part of the key, so a job reads the index of
// its own owner only. The connection's item lists, in joined, the
// partitions it was indexed in (a bounded number, JoinSession's limit),
// so that DeleteConnection removes its index items with it; every item expires
// with the connection (TTL), in case $disconnect never came.
const (
	pfxConn   = "CONN#"
	skConn    = "CONN"
	pfxWSUser = "WSUSER#"
	// attrJoined is the string set of the index partitions a connection
	// was indexed in.
	attrJoined = "joined"
)

// wsUserPK is the index partition of the connections of owner's session
// sid. A session id holds no '#'.
func wsUserPK(owner, sessionID string) string { return pfxWSUser + owner + "#" + sessionID }

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

// Connection returns the hash of the API key connection id was opened
// with and the sessions it is indexed under, or store.ErrNotFound for a
// connection that is unknown, closed or expired.
func (s *Store) Connection(ctx context.Context, id string) (keyHash string, sessions []string, err error) {
	it, err := s.getItem(ctx, key(pfxConn+id, skConn))
	if err != nil {
		return "", nil, fmt.Errorf("dynamo: get connection %q: %w", id, err)
	}
	// TTL deletes lazily: an expired item may still be there.
	if it == nil || getN(it, attrExpiresAt) <= s.now().Unix() {
		return "", nil, store.ErrNotFound
	}
	for _, pk := range getList(it, attrJoined) {
		sessions = append(sessions, pk[strings.LastIndexByte(pk, '#')+1:])
	}
	slices.Sort(sessions)
	return getS(it, "key_hash"), sessions, nil
}

// JoinSession indexes connection id under owner's session sessionID, for
// ttl from now (the longest the connection may live on): its item in the
// index and its mention in the connection's joined set, in one
// transaction. Joining again, joining a connection that is gone and
// joining a connection indexed under limit sessions already change
// nothing and are no error.
func (s *Store) JoinSession(ctx context.Context, id, owner, sessionID string, limit int, ttl time.Duration) error {
	if id == "" || owner == "" || sessionID == "" || strings.Contains(sessionID, "#") || limit <= 0 || ttl <= 0 {
		return errors.New("dynamo: join session: need a connection id, an owner, a session id without '#', a positive limit and ttl")
	}
	pk := wsUserPK(owner, sessionID)
	idx := key(pk, pfxConn+id)
	idx["conn"] = attrS(id)
	idx[attrExpiresAt] = attrN(s.now().Add(ttl).Unix())
	err := s.transact(ctx, []dynamodb.TransactWriteItem{
		{Update: &dynamodb.Update{TableName: s.table, Key: key(pfxConn+id, skConn),
			UpdateExpression:    aws.String("ADD joined :pk"),
			ConditionExpression: aws.String("attribute_exists(pk) AND (attribute_not_exists(joined) OR (NOT contains(joined, :one) AND size(joined) < :max))"),
			ExpressionAttributeValues: item{":pk": attrSS([]string{pk}), ":one": attrS(pk),
				":max": attrN(int64(limit))}}},
		s.put(idx, ""),
	})
	if failed, ok := canceledAt(err); ok && len(failed) > 0 && failed[0] {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: join session of connection %q: %w", id, err)
	}
	return nil
}

// SessionConnections returns the ids of the connections indexed under
// owner's session sessionID and not expired, at most limit of them (in
// the index's order, that of their ids).
func (s *Store) SessionConnections(ctx context.Context, owner, sessionID string, limit int) ([]string, error) {
	items, err := s.queryPrefix(ctx, wsUserPK(owner, sessionID), pfxConn, limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: connections of session %q: %w", sessionID, err)
	}
	now := s.now().Unix()
	var ids []string
	for _, it := range items {
		if getN(it, attrExpiresAt) > now {
			ids = append(ids, getS(it, "conn"))
		}
	}
	return ids, nil
}

// LeaveSession removes connection id from the index of owner's session
// sessionID (a connection found gone); an unknown one is no error.
func (s *Store) LeaveSession(ctx context.Context, id, owner, sessionID string) error {
	k := key(wsUserPK(owner, sessionID), pfxConn+id)
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: k}); err != nil {
		return fmt.Errorf("dynamo: remove connection %q from session %q: %w", id, sessionID, err)
	}
	return nil
}

// DeleteConnection forgets a closed connection and its index items; an
// unknown one is no error.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(pfxConn+id, skConn),
		ReturnValues: dynamodb.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("dynamo: delete connection %q: %w", id, err)
	}
	var keys []item
	for _, pk := range getList(out.Attributes, attrJoined) {
		keys = append(keys, key(pk, pfxConn+id))
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return fmt.Errorf("dynamo: delete the index items of connection %q: %w", id, err)
	}
	return nil
}
