package dynamo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambdaclaw/lambdaclaw/shared/store"
)

// EnqueueRun stores r as queued with the session's next Seq and returns
// it. If a run with r.ID exists, in any session, it returns that run and an
// error wrapping store.ErrExists; if the session does not exist the error
// wraps store.ErrNotFound. A zero CreatedAt is set to now; UpdatedAt starts
// equal to CreatedAt.
//
// The seq is taken atomically from the session item (ADD next_seq), then
// the run, its index and its queue marker are written in one transaction.
// A duplicate id is found before a seq is taken; only two enqueues of the
// same new id racing each other can leave a gap in the seqs, which orders
// runs all the same.
func (s *Store) EnqueueRun(ctx context.Context, r store.Run) (store.Run, error) {
	old, found, err := s.getRun(ctx, r.ID)
	if err != nil {
		return store.Run{}, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, err)
	}
	if found {
		return old, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, store.ErrExists)
	}
	now := s.now()
	r.Status = store.RunQueued
	r.CreatedAt = orNow(r.CreatedAt, now)
	r.UpdatedAt = r.CreatedAt
	r.Seq = math.MaxInt64 // the widest, for the size check
	it := runItem(r)
	if err := checkSize(fmt.Sprintf("run %q", r.ID), it); err != nil {
		return store.Run{}, err
	}
	r.Seq, err = s.takeSeq(ctx, r.SessionID, now)
	if err != nil {
		return store.Run{}, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, err)
	}
	it["seq"] = attrN(r.Seq)
	index := key(sessionPK(r.SessionID), pfxRunIndex+seqKey(r.Seq))
	index["run_id"] = attrS(r.ID)
	err = s.transact(ctx, []types.TransactWriteItem{
		s.put(it, "attribute_not_exists(pk)"),
		s.put(index, ""),
		s.put(queueMarker(r), ""),
	})
	if failed, ok := canceledAt(err); ok && len(failed) > 0 && failed[0] {
		old, found, gerr := s.getRun(ctx, r.ID)
		if gerr == nil && found {
			return old, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, store.ErrExists)
		}
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, err)
	}
	return r, nil
}

// takeSeq bumps the session's next_seq and returns the new value; it marks
// the session active as touchSession does.
func (s *Store) takeSeq(ctx context.Context, sessionID string, now time.Time) (int64, error) {
	set := "ADD next_seq :one SET updated_at = :now"
	vals := item{":one": attrN(1), ":now": attrTime(now)}
	if exp := s.expiresAt(now); exp != 0 {
		set += ", expires_at = :exp"
		vals[":exp"] = attrN(exp)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(sessionPK(sessionID), skSession),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if _, ok := condFailed(err); ok {
		return 0, fmt.Errorf("session %q: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("next seq of session %q: %w", sessionID, err)
	}
	return getN(out.Attributes, "next_seq"), nil
}

// runItem encodes a run.
func runItem(r store.Run) item {
	it := key(pfxRun+r.ID, skRun)
	it["id"] = attrS(r.ID)
	it["session_id"] = attrS(r.SessionID)
	it["seq"] = attrN(r.Seq)
	it["status"] = attrS(string(r.Status))
	it["created_at"] = attrTime(r.CreatedAt)
	it["updated_at"] = attrTime(r.UpdatedAt)
	if len(r.State) > 0 {
		it["state"] = &types.AttributeValueMemberB{Value: r.State}
	}
	return it
}

// decodeRun is the inverse of runItem.
func decodeRun(it item) store.Run {
	return store.Run{
		ID:        getS(it, "id"),
		SessionID: getS(it, "session_id"),
		Seq:       getN(it, "seq"),
		Status:    store.RunStatus(getS(it, "status")),
		State:     getB(it, "state"),
		CreatedAt: getTime(it, "created_at"),
		UpdatedAt: getTime(it, "updated_at"),
	}
}

// queueMarker is the item that says r is unfinished: in its session's
// partition for NextRun, and in gsi1 for UnfinishedSessions.
func queueMarker(r store.Run) item {
	it := key(sessionPK(r.SessionID), pfxQueue+seqKey(r.Seq))
	it["run_id"] = attrS(r.ID)
	it["session_id"] = attrS(r.SessionID)
	it[attrGSI1PK] = attrS(shard(r.SessionID))
	it[attrGSI1SK] = attrS(r.SessionID + "#" + seqKey(r.Seq))
	return it
}

// getRun reads a run; found is false when there is none.
func (s *Store) getRun(ctx context.Context, id string) (r store.Run, found bool, err error) {
	it, err := s.getItem(ctx, key(pfxRun+id, skRun))
	if err != nil || it == nil {
		return store.Run{}, false, err
	}
	return decodeRun(it), true, nil
}

// GetRun returns a run by id, or store.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, found, err := s.getRun(ctx, id)
	if err != nil {
		return store.Run{}, fmt.Errorf("dynamo: get run %q: %w", id, err)
	}
	if !found {
		return store.Run{}, fmt.Errorf("dynamo: get run %q: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// UpdateRun saves r's Status and State and sets the run's UpdatedAt to
// now; the rest of r is ignored. It is store.ErrNotFound for an unknown
// run, and ErrItemTooLarge for a state over the item limit. A run that
// finishes loses its queue marker; one put back to unfinished gets it again.
func (s *Store) UpdateRun(ctx context.Context, r store.Run) error {
	switch r.Status {
	case store.RunQueued, store.RunRunning, store.RunDone, store.RunFailed:
	default:
		return fmt.Errorf("dynamo: update run %q: unknown status %q", r.ID, r.Status)
	}
	probe := r
	probe.Seq = math.MaxInt64
	if err := checkSize(fmt.Sprintf("run %q", r.ID), runItem(probe)); err != nil {
		return err
	}
	now := s.now()
	update := "SET #status = :status, updated_at = :now"
	vals := item{":status": attrS(string(r.Status)), ":now": attrTime(now)}
	if len(r.State) > 0 {
		update += ", #state = :state"
		vals[":state"] = &types.AttributeValueMemberB{Value: r.State}
	} else {
		update += " REMOVE #state"
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pfxRun+r.ID, skRun),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#status": "status", "#state": "state"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllOld,
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: update run %q: %w", r.ID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: update run %q: %w", r.ID, err)
	}
	old := decodeRun(out.Attributes)
	marker := queueMarker(old)
	switch wasOpen, isOpen := !old.Status.Finished(), !r.Status.Finished(); {
	case wasOpen && !isOpen:
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(getS(marker, attrPK), getS(marker, attrSK))})
	case !wasOpen && isOpen:
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: marker})
	}
	if err != nil {
		return fmt.Errorf("dynamo: update run %q: queue marker: %w", r.ID, err)
	}
	return nil
}

// NextRun returns the unfinished run with the lowest Seq in a session, or
// store.ErrNotFound when there is none: the run of the first queue marker,
// read strongly consistent. Stale markers met on the way are deleted.
func (s *Store) NextRun(ctx context.Context, sessionID string) (store.Run, error) {
	for {
		markers, err := s.queryPrefix(ctx, sessionPK(sessionID), pfxQueue, 10)
		if err != nil {
			return store.Run{}, fmt.Errorf("dynamo: next run of %q: %w", sessionID, err)
		}
		if len(markers) == 0 {
			return store.Run{}, fmt.Errorf("dynamo: next run of %q: %w", sessionID, store.ErrNotFound)
		}
		for _, m := range markers {
			r, found, err := s.getRun(ctx, getS(m, "run_id"))
			if err != nil {
				return store.Run{}, fmt.Errorf("dynamo: next run of %q: %w", sessionID, err)
			}
			if found && !r.Status.Finished() {
				return r, nil
			}
			_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(getS(m, attrPK), getS(m, attrSK))})
			if err != nil {
				return store.Run{}, fmt.Errorf("dynamo: next run of %q: drop stale marker: %w", sessionID, err)
			}
		}
	}
}

// UnfinishedSessions lists, in id order, the sessions that have queued or
// running runs, from the sparse gsi1 partitions of queue markers. The
// index is eventually consistent: a run enqueued or finished a moment ago
// may not show yet.
func (s *Store) UnfinishedSessions(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for i := range unfinishedShards {
		p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
			TableName:                 s.table,
			IndexName:                 aws.String(indexGSI1),
			KeyConditionExpression:    aws.String("gsi1pk = :p"),
			ExpressionAttributeValues: item{":p": attrS(fmt.Sprintf("%s%d", gsiUnfinished, i))},
			ProjectionExpression:      aws.String("session_id"),
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("dynamo: unfinished sessions: %w", err)
			}
			for _, it := range out.Items {
				if id := getS(it, "session_id"); !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}
