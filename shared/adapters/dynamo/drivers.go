package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
)

// A run driven inline (sfn.Driver's "run" action) holds a lease kept on
// its item RUN#<id> / RUN: holder (one invocation's id), lease_until (ms)
// and lease, the version every claim increments. The first claim of a run
// steps it; a later one finds either a live lease (a duplicate delivery
// of the invocation: it leaves the run to its holder) or a lapsed one
// (its holder crashed or timed out: the run is handed to the state
// machine). The version fences the holder's commits (store.Commit.Lease):
// it is checked in the condition CommitRun already puts on the run item,
// so a holder whose lease was taken over commits nothing, at no extra
// request. A stop takes the lease even from a live holder (TakeRun), to
// end the run under a version of its own.

// ClaimRun takes the inline lease of a run for holder until until, at
// now, unless another holder's lease is live. lease is the claim's
// version, the fencing token of holder's commits, or zero when the run
// is leased to another holder or does not exist; first reports that no
// holder ever claimed the run before.
func (s *Store) ClaimRun(ctx context.Context, runID, holder string, now, until time.Time) (lease int64, first bool, err error) {
	if runID == "" || holder == "" || !until.After(now) {
		return 0, false, fmt.Errorf("dynamo: claim run %q: need a run, a holder and a lease in the future", runID)
	}
	lease, err = s.lease(ctx, runID, holder, until, &now)
	if err != nil {
		return 0, false, fmt.Errorf("dynamo: claim run %q: %w", runID, err)
	}
	return lease, lease == 1, nil
}

// TakeRun takes the inline lease of a run for holder until until even
// from a live holder, for ending the run (a user's stop): the version
// it returns fences holder's commits, and the commits of the holder it
// took the lease from are refused from now on (store.ErrLeaseLost), as
// are its renewals. lease is zero for a run that does not exist.
func (s *Store) TakeRun(ctx context.Context, runID, holder string, until time.Time) (lease int64, err error) {
	if runID == "" || holder == "" {
		return 0, fmt.Errorf("dynamo: take run %q: need a run and a holder", runID)
	}
	lease, err = s.lease(ctx, runID, holder, until, nil)
	if err != nil {
		return 0, fmt.Errorf("dynamo: take run %q: %w", runID, err)
	}
	return lease, nil
}

// lease gives the run's lease to holder until until with the next
// version, which it returns: when it lapsed at *now, or whatever its
// state when now is nil. It is zero when the lease is live or the run
// does not exist.
func (s *Store) lease(ctx context.Context, runID, holder string, until time.Time, now *time.Time) (int64, error) {
	cond := "attribute_exists(pk)"
	vals := item{":holder": attrS(holder), ":until": attrTime(until), ":one": attrN(1)}
	if now != nil {
		cond += " AND (attribute_not_exists(lease_until) OR lease_until <= :now)"
		vals[":now"] = attrTime(*now)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pfxRun+runID, skRun),
		UpdateExpression:          aws.String("SET holder = :holder, lease_until = :until ADD #lease :one"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
		ExpressionAttributeNames:  map[string]string{"#lease": "lease"},
		ReturnValues:              dynamodb.ReturnValueUpdatedNew,
	})
	if _, ok := condFailed(err); ok {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return getN(out.Attributes, "lease"), nil
}

// RenewRun moves the lease of a run holder holds on to until; ok is false
// when holder no longer holds it.
func (s *Store) RenewRun(ctx context.Context, runID, holder string, until time.Time) (ok bool, err error) {
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           s.table,
		Key:                 key(pfxRun+runID, skRun),
		UpdateExpression:    aws.String("SET lease_until = :until"),
		ConditionExpression: aws.String("holder = :holder"),
		ExpressionAttributeValues: item{
			":until":  attrTime(until),
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
