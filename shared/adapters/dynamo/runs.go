package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// maxTransactItems is how many items one TransactWriteItems may hold
// (botocore's model of DynamoDB: TransactWriteItemList, max 100).
const maxTransactItems = 100

// EnqueueRun creates n.Session unless it exists, stores n.Run as queued
// with the session's next Seq, and writes n.Input. If a run with the id
// exists, in any session, it returns that run and an error wrapping
// store.ErrExists; if the session belongs to another owner, the error
// wraps store.ErrForbidden. A zero CreatedAt is set to now; UpdatedAt
// starts equal to CreatedAt.
//
// The seq is taken atomically from the session item (ADD next_seq, on
// the condition that the session is the owner's), then the run, its index,
// its queue marker and its input are written in one transaction, so no
// reader ever sees the run without its input. A duplicate id is found
// before a seq is taken; only two enqueues of the same new id racing each
// other can leave a gap in the seqs, which orders runs all the same.
func (s *Store) EnqueueRun(ctx context.Context, n store.NewRun) (store.Run, bool, error) {
	r := n.Run
	r.SessionID = n.Session.ID
	fail := func(err error) (store.Run, bool, error) {
		return store.Run{}, false, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, err)
	}
	if len(n.Input) > maxTransactItems-3 {
		return fail(fmt.Errorf("%d input messages, more than the %d one transaction holds", len(n.Input), maxTransactItems-3))
	}
	old, found, err := s.getRun(ctx, r.ID)
	if err != nil {
		return fail(err)
	}
	if found {
		return old, false, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, store.ErrExists)
	}
	now := s.now()
	r.Status = store.RunQueued
	r.CreatedAt = orNow(r.CreatedAt, now)
	r.UpdatedAt = r.CreatedAt
	r.Seq = math.MaxInt64 // the widest, for the size check
	it := s.stamp(runItem(r), now)
	if err := checkSize(fmt.Sprintf("run %q", r.ID), it); err != nil {
		return store.Run{}, false, err
	}
	inputs := make([]item, len(n.Input))
	for i, m := range n.Input {
		inputs[i], err = messageItem(store.Message{SessionID: r.SessionID, Key: store.InputKey(r.Seq, i), RunID: r.ID, Message: m, CreatedAt: r.CreatedAt})
		if err != nil {
			return fail(err)
		}
		s.stamp(inputs[i], now)
		if err := checkSize(fmt.Sprintf("input %d of run %q", i, r.ID), inputs[i]); err != nil {
			return store.Run{}, false, err
		}
	}
	var created bool
	r.Seq, created, err = s.takeSeq(ctx, n.Session, now)
	if err != nil {
		return fail(err)
	}
	it["seq"] = attrN(r.Seq)
	index := key(sessionPK(r.SessionID), pfxRunIndex+seqKey(r.Seq))
	index["run_id"] = attrS(r.ID)
	items := []dynamodb.TransactWriteItem{
		s.put(it, "attribute_not_exists(pk)"),
		s.put(s.stamp(index, now), ""),
		s.put(s.stamp(queueMarker(r), now), ""),
	}
	for i, in := range inputs {
		k := store.InputKey(r.Seq, i)
		in[attrSK] = attrS(pfxMsg + k)
		in["msg_key"] = attrS(k)
		items = append(items, s.put(in, ""))
	}
	err = s.transact(ctx, items)
	if failed, ok := canceledAt(err); ok && len(failed) > 0 && failed[0] {
		old, found, gerr := s.getRun(ctx, r.ID)
		if gerr == nil && found {
			return old, false, fmt.Errorf("dynamo: enqueue run %q: %w", r.ID, store.ErrExists)
		}
	}
	if err != nil {
		return fail(err)
	}
	return r, created, nil
}

// takeSeq bumps the next_seq of sess, creating the session when it does
// not exist, and returns the new value and whether it created the session.
// It marks the session active as touchSession does; a session that
// expired but that DynamoDB has not removed yet starts afresh. A session
// of another owner is store.ErrForbidden.
func (s *Store) takeSeq(ctx context.Context, sess store.Session, now time.Time) (int64, bool, error) {
	set := "ADD next_seq :one SET updated_at = :now"
	vals := item{":one": attrN(1), ":now": attrTime(now), ":owner": attrS(sess.Owner)}
	cond := "attribute_exists(pk) AND #owner = :owner"
	if sess.Owner == "" {
		// Sessions stored before owners existed have none.
		cond = "attribute_exists(pk) AND (#owner = :owner OR attribute_not_exists(#owner))"
	}
	created := false
	for attempt := 0; ; attempt++ {
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 s.table,
			Key:                       key(sessionPK(sess.ID), skSession),
			UpdateExpression:          aws.String(set),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
			ExpressionAttributeValues: vals,
			ReturnValues:              dynamodb.ReturnValueAllNew,
		})
		if err == nil {
			if err := s.keepAlive(ctx, sess.ID, out.Attributes, now, !created); err != nil {
				return 0, false, err
			}
			return getN(out.Attributes, "next_seq"), created, nil
		}
		if _, ok := condFailed(err); !ok {
			return 0, false, fmt.Errorf("next seq of session %q: %w", sess.ID, err)
		}
		if attempt > 0 {
			return 0, false, fmt.Errorf("session %q: %w", sess.ID, store.ErrForbidden)
		}
		// The session is missing, or another owner's.
		switch err := s.CreateSession(ctx, sess); {
		case err == nil:
			created = true
		case errors.Is(err, store.ErrExists):
		default:
			return 0, false, err
		}
	}
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
		it["state"] = &dynamodb.AttributeValueMemberB{Value: r.State}
	}
	if len(r.Options) > 0 {
		it["options"] = &dynamodb.AttributeValueMemberB{Value: r.Options}
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
		Options:   getB(it, "options"),
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

// CommitRun applies a step's writes in one transaction: the run's Status
// and State (with UpdatedAt now), its queue marker removed when it
// finishes, the messages put-if-absent (refreshing the session's expiry),
// the pending calls item and the jobs. It is store.ErrNotFound for an
// unknown run, store.ErrRunFinished for a run done or failed and
// store.ErrLeaseLost when c.Lease is no longer the run's lease version
// (conditions on the run item's update), and ErrItemTooLarge for a
// record over the item limit, before any write. A commit of more items than a transaction holds
// writes its messages first, each put-if-absent, then the rest.
func (s *Store) CommitRun(ctx context.Context, c store.Commit) error {
	r := c.Run
	fail := func(err error) error { return fmt.Errorf("dynamo: commit run %q: %w", r.ID, err) }
	switch r.Status {
	case store.RunQueued, store.RunRunning, store.RunDone, store.RunFailed:
	default:
		return fail(fmt.Errorf("unknown status %q", r.Status))
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
		vals[":state"] = &dynamodb.AttributeValueMemberB{Value: r.State}
	} else {
		update += " REMOVE #state"
	}
	// A finished run is never written again: a step of it committed
	// after its end (a user stopped it) is refused.
	cond, names := "attribute_exists(pk) AND NOT #status IN (:done, :failed)", map[string]string{"#status": "status", "#state": "state"}
	vals[":done"], vals[":failed"] = attrS(string(store.RunDone)), attrS(string(store.RunFailed))
	if c.Lease != 0 {
		// Fenced: the lease the committing invocation claimed still holds
		// the run (drivers.go).
		cond += " AND #lease = :lease"
		names["#lease"] = "lease"
		vals[":lease"] = attrN(c.Lease)
	}
	items := []dynamodb.TransactWriteItem{{Update: &dynamodb.Update{
		TableName:                 s.table,
		Key:                       key(pfxRun+r.ID, skRun),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	}}}
	if r.Status.Finished() {
		marker := queueMarker(r)
		items = append(items, dynamodb.TransactWriteItem{Delete: &dynamodb.Delete{TableName: s.table, Key: key(getS(marker, attrPK), getS(marker, attrSK))}})
	}
	switch {
	case c.Calls != nil:
		b, err := json.Marshal(c.Calls)
		if err != nil {
			return fail(fmt.Errorf("encode calls: %w", err))
		}
		it := key(pfxRun+r.ID, skCalls)
		it["calls"] = attrS(string(b))
		// Pending calls live while the run waits for them, approvals
		// included, and at least as long as the session; TTL removes
		// what a lost run left.
		s.stamp(it, now)
		if getN(it, attrExpiresAt) < now.Add(pendingCallsTTL).Unix() {
			it[attrExpiresAt] = attrN(now.Add(pendingCallsTTL).Unix())
		}
		if err := checkSize(fmt.Sprintf("pending calls of run %q", r.ID), it); err != nil {
			return err
		}
		items = append(items, s.put(it, ""))
	case c.ClearCalls:
		items = append(items, dynamodb.TransactWriteItem{Delete: &dynamodb.Delete{TableName: s.table, Key: key(pfxRun+r.ID, skCalls)}})
	}
	for _, j := range c.Jobs {
		it := key(pfxJob+j.Kind, pfxJobID+j.ID)
		it["payload"] = &dynamodb.AttributeValueMemberB{Value: j.Payload}
		it["created_at"] = attrTime(orNow(j.CreatedAt, now))
		// A job is work for a session: it goes when the session would.
		s.stamp(it, now)
		if err := checkSize(fmt.Sprintf("job %s/%s", j.Kind, j.ID), it); err != nil {
			return err
		}
		items = append(items, s.put(it, ""))
	}
	msgs := make([]item, 0, len(c.Messages))
	for _, m := range c.Messages {
		if m.SessionID != r.SessionID {
			return fail(fmt.Errorf("message %q is for session %q, not the run's %q", m.Key, m.SessionID, r.SessionID))
		}
		m.CreatedAt = orNow(m.CreatedAt, now)
		it, err := messageItem(m)
		if err != nil {
			return fail(err)
		}
		s.stamp(it, now)
		if err := checkSize(fmt.Sprintf("message %q/%q", m.SessionID, m.Key), it); err != nil {
			return err
		}
		msgs = append(msgs, it)
	}
	// The outbox is the commit's: its items are in the transaction or
	// the commit fails. History that does not fit beside it is written
	// first, put-if-absent, as a repeated commit would write it.
	outbox := make([]item, 0, len(c.Outbox))
	for _, m := range c.Outbox {
		it, err := outboxItem(m, now)
		if err != nil {
			return fail(err)
		}
		outbox = append(outbox, it)
	}
	if len(items)+1+len(outbox) > maxTransactItems {
		return fail(fmt.Errorf("%d outbox messages, more than the %d one transaction holds beside the run", len(outbox), maxTransactItems-len(items)-1))
	}
	if len(items)+len(msgs)+1+len(outbox) > maxTransactItems {
		for _, m := range c.Messages {
			if _, err := s.AppendMessage(ctx, m); err != nil {
				return fail(err)
			}
		}
		msgs = nil
	}
	if len(msgs) > 0 {
		items = append(items, dynamodb.TransactWriteItem{Update: &dynamodb.Update{
			TableName:                 s.table,
			Key:                       key(sessionPK(r.SessionID), skSession),
			UpdateExpression:          aws.String("SET updated_at = :now"),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: item{":now": attrTime(now)},
		}})
	}
	first := len(items)
	for _, it := range slices.Concat(msgs, outbox) {
		items = append(items, s.put(it, "attribute_not_exists(pk)"))
	}
	for {
		err := s.transact(ctx, items)
		failed, canceled := canceledAt(err)
		if !canceled {
			if err != nil {
				return fail(err)
			}
			return nil
		}
		if len(failed) > 0 && failed[0] {
			// Why: a lease taken over comes first (its holder stops, as
			// another ended or steps the run), then a run finished.
			it, err := s.getItem(ctx, key(pfxRun+r.ID, skRun))
			switch {
			case err != nil:
				return fail(err)
			case it == nil:
				return fail(store.ErrNotFound)
			case c.Lease != 0 && getN(it, "lease") != c.Lease:
				return fail(store.ErrLeaseLost)
			case decodeRun(it).Status.Finished():
				return fail(store.ErrRunFinished)
			}
			return fail(errors.New("the run's condition failed"))
		}
		// Messages and outbox items whose key exists keep their first
		// write: retry without them. Anything else that failed is an error.
		kept := items[:first:first]
		dropped := false
		for i, it := range items {
			switch {
			case i < first && i < len(failed) && failed[i]:
				return fail(fmt.Errorf("session %q: %w", r.SessionID, store.ErrNotFound))
			case i < first:
			case i < len(failed) && failed[i]:
				dropped = true
			default:
				kept = append(kept, it)
			}
		}
		if !dropped {
			return fail(err)
		}
		items = kept
	}
}

// pendingCallsTTL is how long pending calls outlive their last commit:
// longer than the longest approval wait.
const pendingCallsTTL = 8 * 24 * time.Hour

// PendingCalls returns the run's pending tool calls; none when there are
// none, and store.ErrNotFound for an unknown run.
func (s *Store) PendingCalls(ctx context.Context, runID string) ([]chat.ToolCall, error) {
	it, err := s.getItem(ctx, key(pfxRun+runID, skCalls))
	if err != nil {
		return nil, fmt.Errorf("dynamo: pending calls of run %q: %w", runID, err)
	}
	if it == nil {
		if _, found, err := s.getRun(ctx, runID); err != nil || !found {
			return nil, fmt.Errorf("dynamo: pending calls of run %q: %w", runID, cmp.Or(err, store.ErrNotFound))
		}
		return nil, nil
	}
	if _, ok := it["calls"]; !ok {
		return nil, nil // only the marker of a started call (StartCall)
	}
	var calls []chat.ToolCall
	if err := json.Unmarshal([]byte(getS(it, "calls")), &calls); err != nil {
		return nil, fmt.Errorf("dynamo: pending calls of run %q: decode: %w", runID, err)
	}
	return calls, nil
}

// StartCall adds callID to the string set "started" of the run's CALLS
// item, on the condition that it is not there: one UpdateItem, whose write
// units are those of the CALLS item (one for calls whose arguments are
// under 1 KB). A failed condition is told apart by reading the item: the
// call started (store.ErrExists), or the run has no CALLS item (its pending
// calls were cleared or never written), which is then created holding
// the marker alone, or no run (store.ErrNotFound).
func (s *Store) StartCall(ctx context.Context, runID, callID string) error {
	fail := func(err error) error { return fmt.Errorf("dynamo: start call %q of run %q: %w", callID, runID, err) }
	k := key(pfxRun+runID, skCalls)
	for attempt := 0; ; attempt++ {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           s.table,
			Key:                                 k,
			UpdateExpression:                    aws.String("ADD started :ids"),
			ConditionExpression:                 aws.String("attribute_exists(pk) AND NOT contains(started, :id)"),
			ExpressionAttributeValues:           item{":ids": attrSS([]string{callID}), ":id": attrS(callID)},
			ReturnValuesOnConditionCheckFailure: dynamodb.ReturnValuesOnConditionCheckFailureAllOld,
		})
		old, failed := condFailed(err)
		switch {
		case err == nil:
			return nil
		case !failed:
			return fail(err)
		case len(old) > 0:
			return fail(store.ErrExists)
		case attempt > 0:
			return fail(errors.New("the pending calls keep changing"))
		}
		// No pending calls: the run may have ended (a stop clears them),
		// and then no call of it starts.
		if run, found, err := s.getRun(ctx, runID); err != nil {
			return fail(err)
		} else if !found {
			return fail(store.ErrNotFound)
		} else if run.Status.Finished() {
			return fail(store.ErrRunFinished)
		}
		now := s.now()
		it := key(pfxRun+runID, skCalls)
		it["started"] = attrSS([]string{callID})
		s.stamp(it, now)
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if _, failed := condFailed(err); err == nil || !failed {
			if err != nil {
				return fail(err)
			}
			return nil
		}
		// Written meanwhile: look again.
	}
}

// Jobs returns up to limit queued jobs of kind, oldest first. The jobs of
// a kind share a partition, which is read whole: queues are meant to stay
// short.
func (s *Store) Jobs(ctx context.Context, kind string, limit int) ([]store.Job, error) {
	items, err := s.queryPrefix(ctx, pfxJob+kind, pfxJobID, 0)
	if err != nil {
		return nil, fmt.Errorf("dynamo: jobs %q: %w", kind, err)
	}
	out := make([]store.Job, 0, len(items))
	for _, it := range items {
		out = append(out, store.Job{Kind: kind, ID: strings.TrimPrefix(getS(it, attrSK), pfxJobID), Payload: getB(it, "payload"), CreatedAt: getTime(it, "created_at")})
	}
	slices.SortFunc(out, func(a, b store.Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out[:min(limit, len(out))], nil
}

// DeleteJobs removes jobs, 25 to a batch; missing ones are not an error.
func (s *Store) DeleteJobs(ctx context.Context, kind string, ids ...string) error {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = key(pfxJob+kind, pfxJobID+id)
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return fmt.Errorf("dynamo: delete jobs %s: %w", kind, err)
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
