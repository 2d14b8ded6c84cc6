package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The budget counters (store.Budgets): an item BUDGET#<scope>/<window>
// per counter, expiring after its window. A reservation is an ADD under a
// condition that the count stays within the limit (one UpdateItem, or a
// transaction of them for several budgets), so concurrent turns never
// reserve more than a limit between them.

const pfxBudget = "BUDGET#"

var _ store.Budgets = (*Store)(nil)

// budgetUpdate is the update that adds c's tokens to its counter, under
// the condition that it stays within c's limit when limited.
func (s *Store) budgetUpdate(c store.Charge, limited bool) *dynamodb.Update {
	u := &dynamodb.Update{
		TableName:        s.table,
		Key:              key(pfxBudget+c.Scope, c.Window),
		UpdateExpression: aws.String("ADD spent :n SET expires_at = :exp"),
		ExpressionAttributeValues: item{
			":n":   attrN(c.Tokens),
			":exp": attrN(c.Expires.Unix()),
		},
	}
	if limited {
		u.ConditionExpression = aws.String("attribute_not_exists(spent) OR spent <= :room")
		u.ExpressionAttributeValues[":room"] = attrN(c.Limit - c.Tokens)
	}
	return u
}

// Reserve implements store.Budgets: one conditional UpdateItem for one
// budget, a transaction of them for several.
func (s *Store) Reserve(ctx context.Context, cs []store.Charge) error {
	for _, c := range cs {
		if c.Tokens > c.Limit {
			return &store.BudgetError{Scope: c.Scope, Spent: -1, Limit: c.Limit}
		}
	}
	switch len(cs) {
	case 0:
		return nil
	case 1:
		u := s.budgetUpdate(cs[0], true)
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ConditionExpression: u.ConditionExpression, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: dynamodb.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if old, ok := condFailed(err); ok {
			return &store.BudgetError{Scope: cs[0].Scope, Spent: spentOf(old), Limit: cs[0].Limit}
		}
		if err != nil {
			return fmt.Errorf("dynamo: budget %s: %w", cs[0].Scope, err)
		}
		return nil
	}
	items := make([]dynamodb.TransactWriteItem, len(cs))
	for i, c := range cs {
		items[i] = dynamodb.TransactWriteItem{Update: s.budgetUpdate(c, true)}
	}
	err := s.transact(ctx, items)
	if failed, ok := canceledAt(err); ok {
		for i, f := range failed {
			if f && i < len(cs) {
				return &store.BudgetError{Scope: cs[i].Scope, Spent: -1, Limit: cs[i].Limit}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("dynamo: budgets: %w", err)
	}
	return nil
}

// spentOf reads the count of a counter's item; zero for none.
func spentOf(it item) int64 {
	if it == nil {
		return 0
	}
	return getN(it, "spent")
}

// Charge implements store.Budgets: an UpdateItem per counter, each
// answering the counter's new value.
func (s *Store) Charge(ctx context.Context, cs []store.Charge) ([]int64, error) {
	out := make([]int64, len(cs))
	for i, c := range cs {
		u := s.budgetUpdate(c, false)
		res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ExpressionAttributeValues: u.ExpressionAttributeValues, ReturnValues: dynamodb.ReturnValueUpdatedNew,
		})
		if err != nil {
			return nil, fmt.Errorf("dynamo: budget %s: %w", c.Scope, err)
		}
		out[i] = spentOf(res.Attributes)
	}
	return out, nil
}

// Spent implements store.Budgets, with strongly consistent reads.
func (s *Store) Spent(ctx context.Context, cs []store.Counter) ([]int64, error) {
	out := make([]int64, len(cs))
	for i, c := range cs {
		it, err := s.getItem(ctx, key(pfxBudget+c.Scope, c.Window))
		if err != nil {
			return nil, fmt.Errorf("dynamo: budget %s: %w", c.Scope, err)
		}
		out[i] = spentOf(it)
	}
	return out, nil
}

// ClaimNotice implements store.Budgets: a conditional UpdateItem that
// sets the counter's notified flag once.
func (s *Store) ClaimNotice(ctx context.Context, c store.Counter) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pfxBudget+c.Scope, c.Window),
		UpdateExpression:          aws.String("SET notified = :t"),
		ConditionExpression:       aws.String("attribute_exists(spent) AND attribute_not_exists(notified)"),
		ExpressionAttributeValues: item{":t": attrBool(true)},
	})
	if _, ok := condFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: budget %s notice: %w", c.Scope, err)
	}
	return true, nil
}
