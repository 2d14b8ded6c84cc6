package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CreateKey stores k unless its id or its hash is taken (store.ErrExists):
// the key under its hash, where every request looks it up, and a claim of
// its id, in one transaction. A zero CreatedAt is set to now.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	k.CreatedAt = orNow(k.CreatedAt, s.now())
	it := keyItem(k)
	if err := checkSize(fmt.Sprintf("key %q", k.ID), it); err != nil {
		return err
	}
	claim := key(pfxKeyID+k.ID, skKeyID)
	claim["hash"] = attrS(k.Hash)
	err := s.transact(ctx, []dynamodb.TransactWriteItem{
		s.put(it, "attribute_not_exists(pk)"),
		s.put(claim, "attribute_not_exists(pk)"),
	})
	if failed, ok := canceledAt(err); ok && (len(failed) > 0 && failed[0] || len(failed) > 1 && failed[1]) {
		return fmt.Errorf("dynamo: create key %q: %w", k.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("dynamo: create key %q: %w", k.ID, err)
	}
	return nil
}

// keyItem encodes a key, listed in gsi1 by creation time then id.
func keyItem(k store.APIKey) item {
	it := key(pfxKey+k.Hash, skKey)
	it["id"] = attrS(k.ID)
	it["name"] = attrS(k.Name)
	it["hash"] = attrS(k.Hash)
	it["prefix"] = attrS(k.Prefix)
	it["agents"] = attrList(k.Agents)
	it["autonomy"] = attrS(k.Autonomy)
	it["rate_per_minute"] = attrN(int64(k.RatePerMinute))
	if k.Admin {
		it["admin"] = attrBool(true)
	}
	if k.DailyTokens > 0 {
		it["daily_tokens"] = attrN(k.DailyTokens)
	}
	if k.MonthlyTokens > 0 {
		it["monthly_tokens"] = attrN(k.MonthlyTokens)
	}
	if len(k.DenyTools) > 0 {
		it["deny_tools"] = attrList(k.DenyTools)
	}
	it["created_at"] = attrTime(k.CreatedAt)
	if k.RevokedAt != nil {
		it["revoked_at"] = attrTime(*k.RevokedAt)
	}
	it[attrGSI1PK] = attrS(gsiKeys)
	it[attrGSI1SK] = attrS(msKey(k.CreatedAt) + "#" + k.ID)
	return it
}

// decodeKey is the inverse of keyItem.
func decodeKey(it item) store.APIKey {
	return store.APIKey{
		ID:            getS(it, "id"),
		Name:          getS(it, "name"),
		Hash:          getS(it, "hash"),
		Prefix:        getS(it, "prefix"),
		Agents:        getList(it, "agents"),
		Autonomy:      getS(it, "autonomy"),
		RatePerMinute: int(getN(it, "rate_per_minute")),
		Admin:         getBool(it, "admin"),
		DailyTokens:   getN(it, "daily_tokens"),
		MonthlyTokens: getN(it, "monthly_tokens"),
		DenyTools:     getList(it, "deny_tools"),
		CreatedAt:     getTime(it, "created_at"),
		RevokedAt:     getTimePtr(it, "revoked_at"),
	}
}

// KeyByHash finds a key by the hash of its secret, revoked or not, with one
// strongly consistent read; store.ErrNotFound when there is none.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.APIKey, error) {
	it, err := s.getItem(ctx, key(pfxKey+hash, skKey))
	if err != nil {
		return store.APIKey{}, fmt.Errorf("dynamo: key by hash: %w", err)
	}
	if it == nil {
		return store.APIKey{}, fmt.Errorf("dynamo: key by hash: %w", store.ErrNotFound)
	}
	return decodeKey(it), nil
}

// ListKeys returns every key, oldest first (ties by id), from gsi1; the
// index is eventually consistent, so a key created a moment ago may be
// missing.
func (s *Store) ListKeys(ctx context.Context) ([]store.APIKey, error) {
	var keys []store.APIKey
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: item{":p": attrS(gsiKeys)},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: list keys: %w", err)
		}
		for _, it := range out.Items {
			keys = append(keys, decodeKey(it))
		}
	}
	return keys, nil
}

// RevokeKey marks a key revoked at at; a key revoked already keeps its
// first time. It is store.ErrNotFound for an unknown id.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	claim, err := s.getItem(ctx, key(pfxKeyID+id, skKeyID))
	if err != nil {
		return fmt.Errorf("dynamo: revoke key %q: %w", id, err)
	}
	if claim == nil {
		return fmt.Errorf("dynamo: revoke key %q: %w", id, store.ErrNotFound)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pfxKey+getS(claim, "hash"), skKey),
		UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: item{":at": attrTime(orNow(at, s.now()))},
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: revoke key %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: revoke key %q: %w", id, err)
	}
	return nil
}
