package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A run driven inline (sfn.Driver's "run" action) holds a lease on the
// item RUN#<id> / DRIVER: holder (one invocation's id) and lease_until
// (ms), renewed while the invocation steps the run. The first claim of a
// run steps it; a later one finds either a live lease (a duplicate
// delivery of the invocation: it leaves the run to its holder) or a lapsed
// one (its holder crashed or timed out: the run is handed to the state
// machine).

const skDriver = "DRIVER"

// ClaimRun takes the inline lease of a run for holder until until, at
// now, unless another holder's lease is live. taken reports that holder
// now holds it; first that no holder ever claimed the run before.
func (s *Store) ClaimRun(ctx context.Context, runID, holder string, now, until time.Time) (first, taken bool, err error) {
	if runID == "" || holder == "" || !until.After(now) {
		return false, false, fmt.Errorf("dynamo: claim run %q: need a run, a holder and a lease in the future", runID)
	}
	it := key(pfxRun+runID, skDriver)
	it["holder"] = attrS(holder)
	it["lease_until"] = attrTime(until)
	it[attrExpiresAt] = attrN(until.Add(24 * time.Hour).Unix())
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR lease_until <= :now"),
		ExpressionAttributeValues: item{":now": attrTime(now)},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if _, ok := condFailed(err); ok {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("dynamo: claim run %q: %w", runID, err)
	}
	return len(out.Attributes) == 0, true, nil
}

// RenewRun moves the lease of a run holder holds on to until; ok is false
// when holder no longer holds it.
func (s *Store) RenewRun(ctx context.Context, runID, holder string, until time.Time) (ok bool, err error) {
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           s.table,
		Key:                 key(pfxRun+runID, skDriver),
		UpdateExpression:    aws.String("SET lease_until = :until, " + attrExpiresAt + " = :exp"),
		ConditionExpression: aws.String("holder = :holder"),
		ExpressionAttributeValues: item{
			":until":  attrTime(until),
			":exp":    attrN(until.Add(24 * time.Hour).Unix()),
			":holder": attrS(holder),
		},
	})
	if _, ok := condFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: renew run %q: %w", runID, err)
	}
	return true, nil
}
