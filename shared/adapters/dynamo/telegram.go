package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The Telegram channel's state (store.Telegram), in the same table:
//
//	pk                  sk        what                          other attributes
//	TGSTATE#<key>       TGSTATE   a small value (offset, …)     value
//	TGSEEN#<update_id>  TGSEEN    a handled update              seen_at, expires_at; gsi1pk TGSEEN, gsi1sk <ms:015>#<id>
//	TGUSER#<user_id>    TGUSER    a user let in by a code       code_hash, added_at
//	TGCODE#<hash>       TGCODE    claim of a used access code   user_id
//	TGTRY#<chat_id>     TGTRY     a chat's tries of codes       tries, lockouts, locked_until (absent: none), version
//	TGOUT#<id>          TGOUT     a reply chunk in the outbox   chat_id, text, status, attempts, next_at, last_error,
//	                                                            message_id, claim, claimed_until, expires_at;
//	                                                            gsi1pk TGOUT#<status>, gsi1sk <order:020>
//
// Seen updates expire (TTL) TelegramSeenTTL after they were handled, sent
// messages TelegramSentTTL after they were sent; failed messages stay.
// ClaimOutbox claims a message with a conditional update, so that of two
// functions flushing the outbox at once (the webhook and a step) one
// sends it.
const (
	pfxTGState = "TGSTATE#"
	pfxTGSeen  = "TGSEEN#"
	pfxTGUser  = "TGUSER#"
	pfxTGCode  = "TGCODE#"
	pfxTGTry   = "TGTRY#"
	pfxTGOut   = "TGOUT#"
	skTGState  = "TGSTATE"
	skTGSeen   = "TGSEEN"
	skTGUser   = "TGUSER"
	skTGCode   = "TGCODE"
	skTGTry    = "TGTRY"
	skTGOut    = "TGOUT"
	gsiTGSeen  = "TGSEEN"

	// TelegramSeenTTL is how long a handled update id is remembered;
	// Telegram gives up redelivering an update well before.
	TelegramSeenTTL = 7 * 24 * time.Hour
	// TelegramSentTTL is how long a delivered message is kept.
	TelegramSentTTL = 30 * 24 * time.Hour
)

// TelegramStore is the Telegram channel's durable state in the table.
type TelegramStore struct{ s *Store }

var _ store.Telegram = TelegramStore{}

// Telegram returns the Telegram channel's store.
func (s *Store) Telegram() TelegramStore { return TelegramStore{s} }

// outOrder returns increasing order keys for outbox messages.
var outOrder struct {
	mu   sync.Mutex
	last int64
}

func nextOrder() string {
	outOrder.mu.Lock()
	defer outOrder.mu.Unlock()
	n := max(time.Now().UnixNano(), outOrder.last+1)
	outOrder.last = n
	return fmt.Sprintf("%020d", n)
}

func tgOutGSI(status string) string { return pfxTGOut + status }

// State implements store.Telegram.
func (t TelegramStore) State(ctx context.Context, k string) (string, error) {
	it, err := t.s.getItem(ctx, key(pfxTGState+k, skTGState))
	if err != nil {
		return "", fmt.Errorf("dynamo: telegram state %q: %w", k, err)
	}
	return getS(it, "value"), nil
}

// SetState implements store.Telegram.
func (t TelegramStore) SetState(ctx context.Context, k, value string) error {
	it := key(pfxTGState+k, skTGState)
	it["value"] = attrS(value)
	if _, err := t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it}); err != nil {
		return fmt.Errorf("dynamo: set telegram state %q: %w", k, err)
	}
	return nil
}

// Seen implements store.Telegram.
func (t TelegramStore) Seen(ctx context.Context, updateID int64) (bool, error) {
	it, err := t.s.getItem(ctx, key(pfxTGSeen+strconv.FormatInt(updateID, 10), skTGSeen))
	if err != nil {
		return false, fmt.Errorf("dynamo: telegram seen: %w", err)
	}
	// TTL deletes lazily: an expired item may still be there.
	return it != nil && getN(it, attrExpiresAt) > t.s.now().Unix(), nil
}

// MarkSeen implements store.Telegram; the first mark of an update stays.
func (t TelegramStore) MarkSeen(ctx context.Context, updateID int64, at time.Time) error {
	id := strconv.FormatInt(updateID, 10)
	it := key(pfxTGSeen+id, skTGSeen)
	it["seen_at"] = attrTime(at)
	it[attrExpiresAt] = attrN(at.Add(TelegramSeenTTL).Unix())
	it[attrGSI1PK] = attrS(gsiTGSeen)
	it[attrGSI1SK] = attrS(msKey(at) + "#" + id)
	_, err := t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if _, ok := condFailed(err); err != nil && !ok {
		return fmt.Errorf("dynamo: telegram mark seen: %w", err)
	}
	return nil
}

// PruneSeen implements store.Telegram. TTL removes seen updates anyway;
// this removes them sooner.
func (t TelegramStore) PruneSeen(ctx context.Context, before time.Time) error {
	p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
		TableName: t.s.table, IndexName: aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :pk AND gsi1sk < :before"),
		ExpressionAttributeValues: item{":pk": attrS(gsiTGSeen), ":before": attrS(msKey(before))},
		ProjectionExpression:      aws.String("pk, sk"),
	})
	var keys []item
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("dynamo: telegram prune seen: %w", err)
		}
		for _, it := range out.Items {
			keys = append(keys, key(getS(it, attrPK), getS(it, attrSK)))
		}
	}
	if err := t.s.deleteKeys(ctx, keys); err != nil {
		return fmt.Errorf("dynamo: telegram prune seen: %w", err)
	}
	return nil
}

// AllowedUser implements store.Telegram.
func (t TelegramStore) AllowedUser(ctx context.Context, userID int64) (bool, error) {
	it, err := t.s.getItem(ctx, key(pfxTGUser+strconv.FormatInt(userID, 10), skTGUser))
	if err != nil {
		return false, fmt.Errorf("dynamo: telegram user: %w", err)
	}
	return it != nil, nil
}

// RedeemCode implements store.Telegram: the code's claim and the user are
// written together, each only when new, so a code lets one user in, once.
func (t TelegramStore) RedeemCode(ctx context.Context, codeHash string, userID int64, at time.Time) (bool, error) {
	uid := strconv.FormatInt(userID, 10)
	claim := key(pfxTGCode+codeHash, skTGCode)
	claim["user_id"] = attrS(uid)
	user := key(pfxTGUser+uid, skTGUser)
	user["code_hash"] = attrS(codeHash)
	user["added_at"] = attrTime(at)
	cond := "attribute_not_exists(pk)"
	err := t.s.transact(ctx, []types.TransactWriteItem{t.s.put(claim, cond), t.s.put(user, cond)})
	if _, ok := canceledAt(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: telegram redeem code: %w", err)
	}
	return true, nil
}

// CodeTries implements store.Telegram.
func (t TelegramStore) CodeTries(ctx context.Context, chatID int64) (store.CodeTries, error) {
	it, err := t.s.getItem(ctx, key(pfxTGTry+strconv.FormatInt(chatID, 10), skTGTry))
	if err != nil {
		return store.CodeTries{}, fmt.Errorf("dynamo: telegram code tries: %w", err)
	}
	if it == nil {
		return store.CodeTries{}, nil
	}
	c := store.CodeTries{Tries: int(getN(it, "tries")), Lockouts: int(getN(it, "lockouts")), Version: getN(it, "version")}
	if _, ok := it["locked_until"]; ok {
		c.LockedUntil = getTime(it, "locked_until")
	}
	return c, nil
}

// SetCodeTries implements store.Telegram with a conditional put.
func (t TelegramStore) SetCodeTries(ctx context.Context, chatID int64, prev int64, next store.CodeTries) (bool, error) {
	it := key(pfxTGTry+strconv.FormatInt(chatID, 10), skTGTry)
	it["tries"], it["lockouts"], it["version"] = attrN(int64(next.Tries)), attrN(int64(next.Lockouts)), attrN(prev+1)
	if !next.LockedUntil.IsZero() {
		it["locked_until"] = attrTime(next.LockedUntil)
	}
	in := &dynamodb.PutItemInput{TableName: t.s.table, Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if prev != 0 {
		in.ConditionExpression = aws.String("version = :v")
		in.ExpressionAttributeValues = item{":v": attrN(prev)}
	}
	_, err := t.s.db.PutItem(ctx, in)
	if _, ok := condFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: set telegram code tries: %w", err)
	}
	return true, nil
}

// AddOutbox implements store.Telegram.
func (t TelegramStore) AddOutbox(ctx context.Context, msgs []store.OutboxMessage) error {
	now := t.s.now()
	for _, m := range msgs {
		it, err := outboxItem(m, now)
		if err != nil {
			return err
		}
		_, err = t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it,
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if _, ok := condFailed(err); err != nil && !ok {
			return fmt.Errorf("dynamo: telegram outbox: %w", err)
		}
	}
	return nil
}

// outboxItem is the item of m, pending: AddOutbox's, and those of a
// run's commit (Store.CommitRun).
func outboxItem(m store.OutboxMessage, now time.Time) (item, error) {
	it := key(pfxTGOut+m.ID, skTGOut)
	it["id"] = attrS(m.ID)
	it["chat_id"] = attrN(m.ChatID)
	it["text"] = attrS(m.Text)
	it["status"] = attrS(store.OutboxPending)
	it["attempts"] = attrN(0)
	it["next_at"] = attrTime(orNow(m.NextAt, now))
	it["created_at"] = attrTime(orNow(m.CreatedAt, now))
	it[attrGSI1PK] = attrS(tgOutGSI(store.OutboxPending))
	it[attrGSI1SK] = attrS(nextOrder())
	return it, checkSize("telegram message "+m.ID, it)
}

// UnsentOutbox implements store.Telegram. It reads the pending messages
// from gsi1 in order (the index may lag: ClaimOutbox reads the table).
func (t TelegramStore) UnsentOutbox(ctx context.Context, limit int) ([]store.OutboxMessage, error) {
	if limit <= 0 {
		return nil, nil
	}
	p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
		TableName: t.s.table, IndexName: aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(tgOutGSI(store.OutboxPending))},
		Limit:                     aws.Int32(int32(min(limit, 1000))),
	})
	var out []store.OutboxMessage
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: telegram outbox: %w", err)
		}
		for _, it := range page.Items {
			if len(out) < limit {
				out = append(out, outMessage(it))
			}
		}
	}
	return out, nil
}

func outMessage(it item) store.OutboxMessage {
	m := store.OutboxMessage{
		ID: getS(it, "id"), ChatID: getN(it, "chat_id"), Text: getS(it, "text"), Status: getS(it, "status"),
		Attempts: int(getN(it, "attempts")), NextAt: getTime(it, "next_at"), MessageID: getN(it, "message_id"),
		LastError: getS(it, "last_error"), CreatedAt: getTime(it, "created_at"),
	}
	if until := getTimePtr(it, "claimed_until"); until != nil {
		m.ClaimedUntil = *until
	}
	return m
}

// ClaimOutbox implements store.Telegram.
func (t TelegramStore) ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error) {
	if claim == "" {
		return store.OutboxMessage{}, false, errors.New("dynamo: telegram claim: no claim id")
	}
	res, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: key(pfxTGOut+id, skTGOut),
		UpdateExpression: aws.String("SET claim = :claim, claimed_until = :until"),
		ConditionExpression: aws.String("#st = :pending AND next_at <= :now AND " +
			"(attribute_not_exists(claimed_until) OR claimed_until <= :now)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":claim": attrS(claim), ":until": attrTime(until),
			":now": attrTime(now), ":pending": attrS(store.OutboxPending)},
		ReturnValues: types.ReturnValueAllNew,
	})
	if _, ok := condFailed(err); ok {
		return store.OutboxMessage{}, false, nil
	}
	if err != nil {
		return store.OutboxMessage{}, false, fmt.Errorf("dynamo: telegram claim: %w", err)
	}
	return outMessage(res.Attributes), true, nil
}

// MarkSent implements store.Telegram.
func (t TelegramStore) MarkSent(ctx context.Context, id string, messageID int64, at time.Time) error {
	_, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: key(pfxTGOut+id, skTGOut),
		UpdateExpression: aws.String("SET #st = :sent, message_id = :mid, sent_at = :at, attempts = attempts + :one, " +
			"gsi1pk = :gsi, expires_at = :exp REMOVE claim, claimed_until"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":sent": attrS(store.OutboxSent), ":mid": attrN(messageID), ":at": attrTime(at),
			":one": attrN(1), ":gsi": attrS(tgOutGSI(store.OutboxSent)), ":exp": attrN(at.Add(TelegramSentTTL).Unix())},
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: telegram mark sent: no message %q", id)
	}
	if err != nil {
		return fmt.Errorf("dynamo: telegram mark sent: %w", err)
	}
	return nil
}

// MarkRetry implements store.Telegram; a message no longer pending, or
// claimed by another claim, is left as it is.
func (t TelegramStore) MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error {
	if claim == "" {
		return errors.New("dynamo: telegram mark retry: no claim id")
	}
	status := store.OutboxPending
	if failed {
		status = store.OutboxFailed
	}
	_, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: key(pfxTGOut+id, skTGOut),
		UpdateExpression:         aws.String("SET #st = :st, attempts = :n, next_at = :next, last_error = :err, gsi1pk = :gsi REMOVE claim, claimed_until"),
		ConditionExpression:      aws.String("#st = :pending AND claim = :claim"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":st": attrS(status), ":n": attrN(int64(attempts)), ":next": attrTime(next),
			":err": attrS(lastErr), ":gsi": attrS(tgOutGSI(status)), ":pending": attrS(store.OutboxPending), ":claim": attrS(claim)},
	})
	if _, ok := condFailed(err); err != nil && !ok {
		return fmt.Errorf("dynamo: telegram mark retry: %w", err)
	}
	return nil
}

// OutboxStats implements store.Telegram: it counts gsi1's partitions of
// the outbox (eventually consistent; sent messages of the last
// TelegramSentTTL).
func (t TelegramStore) OutboxStats(ctx context.Context) (store.OutboxStats, error) {
	var st store.OutboxStats
	for status, n := range map[string]*int{store.OutboxPending: &st.Pending, store.OutboxSent: &st.Sent, store.OutboxFailed: &st.Failed} {
		p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
			TableName: t.s.table, IndexName: aws.String(indexGSI1), Select: types.SelectCount,
			KeyConditionExpression:    aws.String("gsi1pk = :pk"),
			ExpressionAttributeValues: item{":pk": attrS(tgOutGSI(status))},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return st, fmt.Errorf("dynamo: telegram outbox stats: %w", err)
			}
			*n += int(out.Count)
		}
	}
	return st, nil
}
