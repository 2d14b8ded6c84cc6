package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CreateApproval stores a pending approval, with no decision, unless its id
// exists in any session (store.ErrExists). The session must exist
// (store.ErrNotFound). The approval, its index and its pending marker are
// written in one transaction that also checks the session. A zero
// CreatedAt is set to now.
func (s *Store) CreateApproval(ctx context.Context, a store.Approval) error {
	now := s.now()
	a.Status, a.Decision, a.ResolvedAt = store.ApprovalPending, "", nil
	a.CreatedAt = orNow(a.CreatedAt, now)
	it := s.stamp(approvalItem(a), now)
	if err := checkSize(fmt.Sprintf("approval %q", a.ID), it); err != nil {
		return err
	}
	pk := sessionPK(a.SessionID)
	index := s.stamp(key(pk, pfxApprIdx+a.ID), now)
	index["approval_id"] = attrS(a.ID)
	marker := s.stamp(key(pk, pendingSK(a)), now)
	marker["approval_id"] = attrS(a.ID)
	if err := s.createInSession(ctx, it, a.SessionID, index, marker); err != nil {
		return fmt.Errorf("dynamo: create approval %q: %w", a.ID, err)
	}
	return nil
}

// createInSession puts it unless an item of its key exists (store.ErrExists)
// and puts items, all in one transaction that checks that the session
// exists (store.ErrNotFound).
func (s *Store) createInSession(ctx context.Context, it item, sessionID string, items ...item) error {
	writes := []dynamodb.TransactWriteItem{
		s.put(it, "attribute_not_exists(pk)"),
		{ConditionCheck: &dynamodb.ConditionCheck{
			TableName:           s.table,
			Key:                 key(sessionPK(sessionID), skSession),
			ConditionExpression: aws.String("attribute_exists(pk)"),
		}},
	}
	for _, x := range items {
		writes = append(writes, s.put(x, ""))
	}
	err := s.transact(ctx, writes)
	if failed, ok := canceledAt(err); ok && len(failed) >= 2 {
		switch {
		case failed[0]:
			return store.ErrExists
		case failed[1]:
			return fmt.Errorf("session %q: %w", sessionID, store.ErrNotFound)
		}
	}
	return err
}

// pendingSK is the sort key of an approval's pending marker: by creation
// time, then id, so the first marker is the oldest pending approval.
func pendingSK(a store.Approval) string { return pfxPending + msKey(a.CreatedAt) + "#" + a.ID }

// approvalItem encodes an approval.
func approvalItem(a store.Approval) item {
	it := key(pfxApproval+a.ID, skApproval)
	it["id"] = attrS(a.ID)
	it["session_id"] = attrS(a.SessionID)
	it["run_id"] = attrS(a.RunID)
	it["calls"] = attrList(a.Calls)
	it["tools"] = attrList(a.Tools)
	it["prompt"] = attrS(a.Prompt)
	it["status"] = attrS(string(a.Status))
	if a.Kind != "" {
		it["kind"] = attrS(a.Kind)
	}
	it["created_at"] = attrTime(a.CreatedAt)
	if a.Decision != "" {
		it["decision"] = attrS(a.Decision)
	}
	if a.Token != "" {
		it["token"] = attrS(a.Token)
	}
	if a.ResolvedAt != nil {
		it["resolved_at"] = attrTime(*a.ResolvedAt)
	}
	return it
}

// decodeApproval is the inverse of approvalItem.
func decodeApproval(it item) store.Approval {
	return store.Approval{
		ID:         getS(it, "id"),
		SessionID:  getS(it, "session_id"),
		RunID:      getS(it, "run_id"),
		Kind:       getS(it, "kind"),
		Calls:      getList(it, "calls"),
		Tools:      getList(it, "tools"),
		Prompt:     getS(it, "prompt"),
		Status:     store.ApprovalStatus(getS(it, "status")),
		Decision:   getS(it, "decision"),
		Token:      getS(it, "token"),
		CreatedAt:  getTime(it, "created_at"),
		ResolvedAt: getTimePtr(it, "resolved_at"),
	}
}

// getApproval reads an approval; it returns nil when there is none.
func (s *Store) getApproval(ctx context.Context, id string) (*store.Approval, error) {
	it, err := s.getItem(ctx, key(pfxApproval+id, skApproval))
	if err != nil || it == nil {
		return nil, err
	}
	a := decodeApproval(it)
	return &a, nil
}

// GetApproval returns an approval by id, or store.ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	a, err := s.getApproval(ctx, id)
	if err != nil {
		return store.Approval{}, fmt.Errorf("dynamo: get approval %q: %w", id, err)
	}
	if a == nil {
		return store.Approval{}, fmt.Errorf("dynamo: get approval %q: %w", id, store.ErrNotFound)
	}
	return *a, nil
}

// PendingApproval returns the session's oldest pending approval, or
// store.ErrNotFound when there is none: the approval of the first pending
// marker, read strongly consistent. Stale markers met on the way are
// deleted.
func (s *Store) PendingApproval(ctx context.Context, sessionID string) (store.Approval, error) {
	for {
		markers, err := s.queryPrefix(ctx, sessionPK(sessionID), pfxPending, 10)
		if err != nil {
			return store.Approval{}, fmt.Errorf("dynamo: pending approval of %q: %w", sessionID, err)
		}
		if len(markers) == 0 {
			return store.Approval{}, fmt.Errorf("dynamo: pending approval of %q: %w", sessionID, store.ErrNotFound)
		}
		for _, m := range markers {
			a, err := s.getApproval(ctx, getS(m, "approval_id"))
			if err != nil {
				return store.Approval{}, fmt.Errorf("dynamo: pending approval of %q: %w", sessionID, err)
			}
			if a != nil && a.Status == store.ApprovalPending {
				return *a, nil
			}
			_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(getS(m, attrPK), getS(m, attrSK))})
			if err != nil {
				return store.Approval{}, fmt.Errorf("dynamo: pending approval of %q: drop stale marker: %w", sessionID, err)
			}
		}
	}
}

// ResolveApproval records the answer to a pending approval with an update
// conditional on its still being pending, so the first answer wins, and
// returns the approval as resolved. A later answer changes nothing and gets
// the approval as it is with an error wrapping store.ErrConflict.
func (s *Store) ResolveApproval(ctx context.Context, id string, status store.ApprovalStatus, decision string, at time.Time) (store.Approval, error) {
	if status != store.ApprovalApproved && status != store.ApprovalDenied {
		return store.Approval{}, fmt.Errorf("dynamo: resolve approval %q: status %q is not an answer", id, status)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                s.table,
		Key:                      key(pfxApproval+id, skApproval),
		UpdateExpression:         aws.String("SET #status = :status, decision = :decision, resolved_at = :at"),
		ConditionExpression:      aws.String("#status = :pending"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: item{
			":status":   attrS(string(status)),
			":decision": attrS(decision),
			":at":       attrTime(orNow(at, s.now())),
			":pending":  attrS(string(store.ApprovalPending)),
		},
		ReturnValues:                        dynamodb.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: dynamodb.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := condFailed(err); ok {
		var a *store.Approval
		if len(old) > 0 {
			v := decodeApproval(old)
			a = &v
		} else if a, err = s.getApproval(ctx, id); err != nil {
			return store.Approval{}, fmt.Errorf("dynamo: resolve approval %q: %w", id, err)
		}
		if a == nil {
			return store.Approval{}, fmt.Errorf("dynamo: resolve approval %q: %w", id, store.ErrNotFound)
		}
		return *a, fmt.Errorf("dynamo: resolve approval %q: already %s: %w", id, a.Status, store.ErrConflict)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("dynamo: resolve approval %q: %w", id, err)
	}
	a := decodeApproval(out.Attributes)
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(sessionPK(a.SessionID), pendingSK(a))})
	if err != nil {
		return a, fmt.Errorf("dynamo: resolve approval %q: pending marker: %w", id, err)
	}
	return a, nil
}

// SetApprovalToken saves the task token that resumes the run; an empty
// token removes it. It is store.ErrNotFound for an unknown approval.
func (s *Store) SetApprovalToken(ctx context.Context, id, token string) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                s.table,
		Key:                      key(pfxApproval+id, skApproval),
		UpdateExpression:         aws.String("REMOVE #token"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#token": "token"},
	}
	if token != "" {
		in.UpdateExpression = aws.String("SET #token = :token")
		in.ExpressionAttributeValues = item{":token": attrS(token)}
	}
	_, err := s.db.UpdateItem(ctx, in)
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: set approval token %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: set approval token %q: %w", id, err)
	}
	return nil
}
