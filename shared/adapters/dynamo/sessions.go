package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CreateSession stores sess unless its id exists; it returns an error
// wrapping store.ErrExists then. A zero CreatedAt is set to now and a zero
// UpdatedAt to CreatedAt. Items left in the partition by an earlier session
// of the same id that TTL removed are deleted first.
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	now := s.now()
	created := orNow(sess.CreatedAt, now)
	updated := orNow(sess.UpdatedAt, created)
	it := key(sessionPK(sess.ID), skSession)
	it["id"] = attrS(sess.ID)
	it["agent"] = attrS(sess.Agent)
	it["owner"] = attrS(sess.Owner)
	if sess.Channel != "" {
		it["channel"] = attrS(sess.Channel)
	}
	it["ephemeral"] = attrBool(sess.Ephemeral)
	it["created_at"] = attrTime(created)
	it["updated_at"] = attrTime(updated)
	if allow := dedupe(sess.Allowlist); len(allow) > 0 {
		it["allowlist"] = attrSS(allow)
	}
	if sess.Owner != "" && !sess.Ephemeral {
		it[attrGSI1PK] = attrS(pfxOwner + sess.Owner)
		it[attrGSI1SK] = attrS(msKey(created) + "#" + sess.ID)
	}
	s.stamp(it, now)
	if err := checkSize(fmt.Sprintf("session %q", sess.ID), it); err != nil {
		return err
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           s.table,
		Item:                it,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: create session %q: %w", sess.ID, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("dynamo: create session %q: %w", sess.ID, err)
	}
	if err := s.purgeLeftovers(ctx, sess.ID); err != nil {
		return fmt.Errorf("dynamo: create session %q: %w", sess.ID, err)
	}
	if err := s.indexChannelSession(ctx, it); err != nil {
		return fmt.Errorf("dynamo: create session %q: %w", sess.ID, err)
	}
	return nil
}

// indexChannelSession puts the CHANNELIDX item of the session whose
// SESSION item is sess when its owner is an identity of the channel it
// was started on ("<channel>:…"), so that ChannelSessions lists it. The
// item is in the session's partition: it expires, is refreshed and is
// deleted with the session's other items.
func (s *Store) indexChannelSession(ctx context.Context, sess item) error {
	ch, owner := getS(sess, "channel"), getS(sess, "owner")
	if ch == "" || !strings.HasPrefix(owner, ch+":") || getBool(sess, "ephemeral") {
		return nil
	}
	id := getS(sess, "id")
	it := key(sessionPK(id), skChIdx)
	for _, a := range []string{"id", "agent", "owner", "channel", "created_at", attrExpiresAt} {
		if v, ok := sess[a]; ok {
			it[a] = v
		}
	}
	it[attrGSI1PK] = attrS(pfxChannelSessions + ch)
	it[attrGSI1SK] = attrS(msKey(getTime(sess, "created_at")) + "#" + id)
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: it}); err != nil {
		return fmt.Errorf("index the channel's session: %w", err)
	}
	return nil
}

// purgeLeftovers deletes what an expired session of the same id left in
// the partition: anything but the SESSION and LANE items. It reads at most
// three keys when there is nothing to do, as the SESSION item sorts last.
func (s *Store) purgeLeftovers(ctx context.Context, id string) error {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table,
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(sessionPK(id))},
		ProjectionExpression:      aws.String("pk, sk"),
		Limit:                     aws.Int32(3),
	})
	if err != nil {
		return fmt.Errorf("look for leftovers: %w", err)
	}
	for _, it := range out.Items {
		if sk := getS(it, attrSK); sk != skSession && sk != skLane {
			return s.purge(ctx, id, true, 0)
		}
	}
	return nil
}

// purge deletes a session's partition and the run, approval and response
// items it indexes: first those, then the partition, then the SESSION
// item, so that an interrupted purge can be run again. keepLive keeps the
// SESSION and LANE items; with before > 0, only the items that expire by
// then go (those written since, by a concurrent use, stay).
func (s *Store) purge(ctx context.Context, id string, keepLive bool, before int64) error {
	outside, inside, live, err := s.sessionItems(ctx, id, before)
	if err != nil {
		return err
	}
	if keepLive {
		live = nil
	}
	for _, keys := range [][]item{outside, inside, live} {
		if err := s.deleteKeys(ctx, keys); err != nil {
			return fmt.Errorf("delete session items: %w", err)
		}
	}
	return nil
}

// sessionItems returns the keys of a session's items: outside its
// partition (the run, calls, approval and response items its index items
// name), inside it, and its SESSION and LANE items (live). With before >
// 0, the items of the partition that expire after before, and those
// their index items name, are left out.
func (s *Store) sessionItems(ctx context.Context, id string, before int64) (outside, inside, live []item, err error) {
	pk := sessionPK(id)
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                 s.table,
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(pk)},
		ProjectionExpression:      aws.String("pk, sk, run_id, approval_id, response_id, expires_at"),
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list session items: %w", err)
		}
		for _, it := range out.Items {
			sk := getS(it, attrSK)
			switch {
			case sk == skSession || sk == skLane:
				live = append(live, key(pk, sk))
				continue
			case before > 0 && getN(it, attrExpiresAt) > before:
				continue
			case strings.HasPrefix(sk, pfxRunIndex):
				outside = append(outside, key(pfxRun+getS(it, "run_id"), skRun), key(pfxRun+getS(it, "run_id"), skCalls))
			case strings.HasPrefix(sk, pfxApprIdx):
				outside = append(outside, key(pfxApproval+getS(it, "approval_id"), skApproval))
			case strings.HasPrefix(sk, pfxRespIdx):
				outside = append(outside, key(pfxResponse+getS(it, "response_id"), skResponse))
			}
			inside = append(inside, key(pk, sk))
		}
	}
	return outside, inside, live, nil
}

// GetSession returns a session, or an error wrapping store.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	it, err := s.getItem(ctx, key(sessionPK(id), skSession))
	if err != nil {
		return store.Session{}, fmt.Errorf("dynamo: get session %q: %w", id, err)
	}
	if it == nil {
		return store.Session{}, fmt.Errorf("dynamo: get session %q: %w", id, store.ErrNotFound)
	}
	return decodeSession(it), nil
}

// decodeSession reads a SESSION item.
func decodeSession(it item) store.Session {
	return store.Session{
		ID:        getS(it, "id"),
		Agent:     getS(it, "agent"),
		Owner:     getS(it, "owner"),
		Channel:   getS(it, "channel"),
		Ephemeral: getBool(it, "ephemeral"),
		Allowlist: getList(it, "allowlist"),
		CreatedAt: getTime(it, "created_at"),
		UpdatedAt: getTime(it, "updated_at"),
	}
}

// SessionsOf implements store.OwnerSessions from gsi1, where every
// SESSION item of an owner (not ephemeral) is listed under OWNER#<owner>
// by creation time. Sessions stored before that index existed are not
// listed until they are created again.
func (s *Store) SessionsOf(ctx context.Context, owner string, limit int) ([]store.Session, error) {
	list, err := s.indexedSessions(ctx, pfxOwner+owner, limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: sessions of %q: %w", owner, err)
	}
	return list, nil
}

// ChannelSessions implements store.OwnerSessions from gsi1, where the
// CHANNELIDX item of each session of a channel's identity is listed
// under CHSESSIONS#<channel> by creation time. Sessions stored before
// that index existed are not listed until they are created again.
func (s *Store) ChannelSessions(ctx context.Context, channel string, limit int) ([]store.Session, error) {
	list, err := s.indexedSessions(ctx, pfxChannelSessions+channel, limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: sessions of channel %q: %w", channel, err)
	}
	return list, nil
}

// indexedSessions returns the sessions of the gsi1 partition pk, newest
// first, up to limit.
func (s *Store) indexedSessions(ctx context.Context, pk string, limit int) ([]store.Session, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: item{":p": attrS(pk)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(min(limit, 1000))),
	})
	if err != nil {
		return nil, err
	}
	list := make([]store.Session, 0, len(out.Items))
	for _, it := range out.Items {
		list = append(list, decodeSession(it))
	}
	return list, nil
}

// DeleteSession removes the session with its history, runs, approvals,
// responses and lane; an unknown session is no error. It also cleans up
// after a session whose SESSION item TTL removed.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if err := s.purge(ctx, id, false, 0); err != nil {
		return fmt.Errorf("dynamo: delete session %q: %w", id, err)
	}
	return nil
}

// AllowTool adds a tool to the session's allowlist, a string set, so that
// concurrent and repeated adds keep one of each. It is store.ErrNotFound
// for an unknown session.
func (s *Store) AllowTool(ctx context.Context, sessionID, tool string) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(sessionPK(sessionID), skSession),
		UpdateExpression:          aws.String("ADD allowlist :tool"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: item{":tool": attrSS([]string{tool})},
	}
	_, err := s.db.UpdateItem(ctx, in)
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: allow tool %q in session %q: %w", tool, sessionID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: allow tool %q in session %q: %w", tool, sessionID, err)
	}
	return nil
}

// touchSession marks activity on a session: UpdatedAt becomes now, and
// the expiry of its items moves SessionTTL ahead when it is due
// (keepAlive). It is store.ErrNotFound for an unknown session, and never
// creates one.
func (s *Store) touchSession(ctx context.Context, id string, now time.Time) error {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(sessionPK(id), skSession),
		UpdateExpression:          aws.String("SET updated_at = :now"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: item{":now": attrTime(now)},
		ReturnValues:              dynamodb.ReturnValueAllNew,
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return s.keepAlive(ctx, id, out.Attributes, now, false)
}

// keepAlive moves the expiry of a session in use, whose SESSION item is
// sess, SessionTTL ahead of now when its last move is more than a tenth of
// SessionTTL ago (see Expiry in the package doc). With fresh, a session
// that has expired already (DynamoDB's TTL has not removed it yet) starts
// afresh: what it held is deleted first, its allowlist with it.
func (s *Store) keepAlive(ctx context.Context, id string, sess item, now time.Time, fresh bool) error {
	if s.ttl < 0 {
		return nil
	}
	exp := getN(sess, attrExpiresAt)
	if exp >= now.Add(s.ttl-s.ttl/10).Unix() {
		return nil
	}
	expired := fresh && exp != 0 && exp <= now.Unix()
	if expired {
		// What a concurrent use wrote since the expiry stays; the
		// channel's index of the session goes with what expired, and
		// comes back.
		if err := s.purge(ctx, id, true, exp); err != nil {
			return fmt.Errorf("start expired session %q afresh: %w", id, err)
		}
		if err := s.indexChannelSession(ctx, sess); err != nil {
			return fmt.Errorf("start expired session %q afresh: %w", id, err)
		}
	}
	return s.refresh(ctx, id, s.expiresAt(now), expired)
}

// refreshWorkers is how many items refresh updates at once.
const refreshWorkers = 8

// refresh sets the expiry of every item of a session to exp (never
// earlier than it was), then that of its SESSION item, so that a refresh
// cut short is done again by the next use. dropAllow removes the
// session's allowlist too.
func (s *Store) refresh(ctx context.Context, id string, exp int64, dropAllow bool) error {
	outside, inside, _, err := s.sessionItems(ctx, id, 0)
	if err != nil {
		return fmt.Errorf("refresh session %q: %w", id, err)
	}
	vals := item{":exp": attrN(exp)}
	keys := make(chan item)
	errs := make(chan error, refreshWorkers)
	var wg sync.WaitGroup
	for range refreshWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:                 s.table,
					Key:                       k,
					UpdateExpression:          aws.String("SET expires_at = :exp"),
					ConditionExpression:       aws.String("attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at < :exp)"),
					ExpressionAttributeValues: vals,
				})
				if _, ok := condFailed(err); err != nil && !ok {
					errs <- err
					return
				}
			}
		}()
	}
	var failed error
send:
	for _, k := range append(outside, inside...) {
		select {
		case keys <- k:
		case failed = <-errs:
			break send
		}
	}
	close(keys)
	wg.Wait()
	if failed == nil && len(errs) > 0 {
		failed = <-errs
	}
	if failed != nil {
		return fmt.Errorf("refresh session %q: %w", id, failed)
	}
	update := "SET expires_at = :exp"
	if dropAllow {
		update += " REMOVE allowlist"
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(sessionPK(id), skSession),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: vals,
	})
	if _, ok := condFailed(err); err != nil && !ok {
		return fmt.Errorf("refresh session %q: %w", id, err)
	}
	return nil
}

// AppendMessage stores m unless its (session, key) exists, and reports
// whether it wrote. The session must exist (else store.ErrNotFound); the
// write refreshes its UpdatedAt and expiry. A message over DynamoDB's item
// limit is refused with ErrItemTooLarge. A zero CreatedAt is set to now.
func (s *Store) AppendMessage(ctx context.Context, m store.Message) (bool, error) {
	now := s.now()
	m.CreatedAt = orNow(m.CreatedAt, now)
	it, err := messageItem(m)
	if err != nil {
		return false, fmt.Errorf("dynamo: append message %q/%q: %w", m.SessionID, m.Key, err)
	}
	s.stamp(it, now)
	if err := checkSize(fmt.Sprintf("message %q/%q", m.SessionID, m.Key), it); err != nil {
		return false, err
	}
	if err := s.touchSession(ctx, m.SessionID, now); err != nil {
		return false, fmt.Errorf("dynamo: append message %q/%q: %w", m.SessionID, m.Key, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           s.table,
		Item:                it,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if _, ok := condFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: append message %q/%q: %w", m.SessionID, m.Key, err)
	}
	return true, nil
}

// messageItem encodes a message; tool calls and parts are kept as JSON
// arrays.
func messageItem(m store.Message) (item, error) {
	it := key(sessionPK(m.SessionID), pfxMsg+m.Key)
	it["session_id"] = attrS(m.SessionID)
	it["msg_key"] = attrS(m.Key)
	it["run_id"] = attrS(m.RunID)
	it["role"] = attrS(string(m.Role))
	it["content"] = attrS(m.Content)
	it["created_at"] = attrTime(m.CreatedAt)
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return nil, fmt.Errorf("encode tool calls: %w", err)
		}
		it["tool_calls"] = attrS(string(b))
	}
	if len(m.Parts) > 0 {
		b, err := json.Marshal(m.Parts)
		if err != nil {
			return nil, fmt.Errorf("encode parts: %w", err)
		}
		it["parts"] = attrS(string(b))
	}
	if m.ToolCallID != "" {
		it["tool_call_id"] = attrS(m.ToolCallID)
	}
	if m.Name != "" {
		it["name"] = attrS(m.Name)
	}
	return it, nil
}

// decodeMessage is the inverse of messageItem.
func decodeMessage(it item) (store.Message, error) {
	m := store.Message{
		SessionID: getS(it, "session_id"),
		Key:       getS(it, "msg_key"),
		RunID:     getS(it, "run_id"),
		Message: chat.Message{
			Role:       chat.Role(getS(it, "role")),
			Content:    getS(it, "content"),
			ToolCallID: getS(it, "tool_call_id"),
			Name:       getS(it, "name"),
		},
		CreatedAt: getTime(it, "created_at"),
	}
	if tc := getS(it, "tool_calls"); tc != "" {
		if err := json.Unmarshal([]byte(tc), &m.ToolCalls); err != nil {
			return store.Message{}, fmt.Errorf("decode tool calls of %q: %w", m.Key, err)
		}
	}
	if p := getS(it, "parts"); p != "" {
		if err := json.Unmarshal([]byte(p), &m.Parts); err != nil {
			return store.Message{}, fmt.Errorf("decode parts of %q: %w", m.Key, err)
		}
	}
	return m, nil
}

// GetMessage returns one message by key, or store.ErrNotFound.
func (s *Store) GetMessage(ctx context.Context, sessionID, msgKey string) (store.Message, error) {
	it, err := s.getItem(ctx, key(sessionPK(sessionID), pfxMsg+msgKey))
	if err != nil {
		return store.Message{}, fmt.Errorf("dynamo: get message %q/%q: %w", sessionID, msgKey, err)
	}
	if it == nil {
		return store.Message{}, fmt.Errorf("dynamo: get message %q/%q: %w", sessionID, msgKey, store.ErrNotFound)
	}
	m, err := decodeMessage(it)
	if err != nil {
		return store.Message{}, fmt.Errorf("dynamo: get message %q/%q: %w", sessionID, msgKey, err)
	}
	return m, nil
}

// Messages returns the history of a session ordered by key (DynamoDB orders
// sort keys by their UTF-8 bytes, as Go compares strings); none for an
// unknown session.
func (s *Store) Messages(ctx context.Context, sessionID string) ([]store.Message, error) {
	return s.messagesFrom(ctx, sessionID, "")
}

// RunMessages returns the messages of one run of a session, ordered by
// key: one Query on the run's key prefix.
func (s *Store) RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error) {
	return s.messagesFrom(ctx, sessionID, store.RunPrefix(seq))
}

// messagesFrom returns a session's messages whose key starts with prefix.
func (s *Store) messagesFrom(ctx context.Context, sessionID, prefix string) ([]store.Message, error) {
	items, err := s.queryPrefix(ctx, sessionPK(sessionID), pfxMsg+prefix, 0)
	if err != nil {
		return nil, fmt.Errorf("dynamo: messages of %q: %w", sessionID, err)
	}
	out := make([]store.Message, 0, len(items))
	for _, it := range items {
		m, err := decodeMessage(it)
		if err != nil {
			return nil, fmt.Errorf("dynamo: messages of %q: %w", sessionID, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// DeleteMessages removes the given keys, 25 to a batch; missing keys are
// ignored.
func (s *Store) DeleteMessages(ctx context.Context, sessionID string, keys []string) error {
	ks := make([]item, len(keys))
	for i, k := range keys {
		ks[i] = key(sessionPK(sessionID), pfxMsg+k)
	}
	if err := s.deleteKeys(ctx, ks); err != nil {
		return fmt.Errorf("dynamo: delete messages of %q: %w", sessionID, err)
	}
	return nil
}

// AcquireLane takes the session's lane for owner until ttl from now: the
// lease that lets one run at a time step a session on AWS. It succeeds, and
// reports true, when the lane is free, its lease has expired, or owner
// holds it already (the lease is then renewed); it reports false when
// another owner holds a live lease. Expiry is judged by this process's
// clock, so leases should be far longer than the clock skew between
// Lambda hosts.
func (s *Store) AcquireLane(ctx context.Context, sessionID, owner string, ttl time.Duration) (bool, error) {
	if owner == "" || ttl <= 0 {
		return false, fmt.Errorf("dynamo: acquire lane %q: need an owner and a positive ttl", sessionID)
	}
	now := s.now()
	until := now.Add(ttl)
	it := key(sessionPK(sessionID), skLane)
	it["owner"] = attrS(owner)
	it["lease_until"] = attrTime(until)
	// TTL removes a forgotten lease a while after it ended.
	it[attrExpiresAt] = attrN(until.Add(time.Hour).Unix())
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                s.table,
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR lease_until <= :now OR #owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: item{
			":now":   attrTime(now),
			":owner": attrS(owner),
		},
	})
	if _, ok := condFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: acquire lane %q for %q: %w", sessionID, owner, err)
	}
	return true, nil
}

// HoldsLane reports whether owner holds the session's lane, its lease
// running or not (a strongly consistent read).
func (s *Store) HoldsLane(ctx context.Context, sessionID, owner string) (bool, error) {
	it, err := s.getItem(ctx, key(sessionPK(sessionID), skLane))
	if err != nil {
		return false, fmt.Errorf("dynamo: read lane %q: %w", sessionID, err)
	}
	return it != nil && getS(it, "owner") == owner, nil
}

// ReleaseLane frees the session's lane if owner holds it. Releasing a free
// lane, or one another owner holds (because this owner's lease expired and
// was taken), changes nothing and is no error, so a retried or late release
// is harmless: only the owner releases.
func (s *Store) ReleaseLane(ctx context.Context, sessionID, owner string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                s.table,
		Key:                      key(sessionPK(sessionID), skLane),
		ConditionExpression:      aws.String("#owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: item{
			":owner": attrS(owner),
		},
	})
	if _, ok := condFailed(err); ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: release lane %q for %q: %w", sessionID, owner, err)
	}
	return nil
}

// dedupe returns the distinct strings of list, in first-seen order.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
