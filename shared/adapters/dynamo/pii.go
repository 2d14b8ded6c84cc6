package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// skPII is the item of a session's personal data tokens (store.PIIVault),
// in the session's partition: deleted with the session, expiring with it,
// and encrypted at rest as every item of the table is, with the table's
// key. It holds the tokens as a JSON list (tokens) and a version that
// every write increments, the condition of the next.
const skPII = "PII"

// piiAttempts bounds AddPII's retries when another writer changed the
// item between its read and its write.
const piiAttempts = 10

// PIITokens implements store.PIIVault.
func (s *Store) PIITokens(ctx context.Context, sessionID string) ([]store.PIIToken, error) {
	toks, _, err := s.piiItem(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("dynamo: pii tokens of %q: %w", sessionID, err)
	}
	return toks, nil
}

// piiItem reads the session's tokens and the item's version, 0 for none.
func (s *Store) piiItem(ctx context.Context, sessionID string) ([]store.PIIToken, int64, error) {
	it, err := s.getItem(ctx, key(sessionPK(sessionID), skPII))
	if err != nil || it == nil {
		return nil, 0, err
	}
	var toks []store.PIIToken
	if err := json.Unmarshal([]byte(getS(it, "tokens")), &toks); err != nil {
		return nil, 0, fmt.Errorf("decode tokens: %w", err)
	}
	return toks, getN(it, "version"), nil
}

// AddPII implements store.PIIVault: read, number, and write on the
// condition that the version read is still the item's, again when
// another writer came in between.
func (s *Store) AddPII(ctx context.Context, sessionID string, values []store.PIIToken) ([]store.PIIToken, error) {
	for range piiAttempts {
		have, version, err := s.piiItem(ctx, sessionID)
		if err != nil {
			return nil, fmt.Errorf("dynamo: add pii tokens: %w", err)
		}
		add, err := store.AssignPII(have, values)
		if err != nil {
			return nil, fmt.Errorf("dynamo: add pii tokens: %w", err)
		}
		if len(add) == 0 {
			return have, nil
		}
		all := append(have, add...)
		b, err := json.Marshal(all)
		if err != nil {
			return nil, fmt.Errorf("dynamo: add pii tokens: %w", err)
		}
		it := key(sessionPK(sessionID), skPII)
		it["tokens"], it["version"] = attrS(string(b)), attrN(version+1)
		in := &dynamodb.PutItemInput{TableName: s.table, Item: s.stamp(it, s.now())}
		if version == 0 {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		} else {
			in.ConditionExpression = aws.String("version = :v")
			in.ExpressionAttributeValues = item{":v": attrN(version)}
		}
		_, err = s.db.PutItem(ctx, in)
		if _, lost := condFailed(err); lost {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dynamo: add pii tokens: %w", err)
		}
		return all, nil
	}
	return nil, fmt.Errorf("dynamo: add pii tokens: %w", errors.New("the item kept changing over "+strconv.Itoa(piiAttempts)+" attempts"))
}
