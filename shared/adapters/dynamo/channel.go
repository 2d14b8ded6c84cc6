package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// A messaging channel's state (store.Channel), in the same table, under
// keys that begin with the channel's name in capitals (<P>: TG for
// Telegram's "tg", SLACK, DISCORD, WHATSAPP):
//
//	pk                  sk        what                          other attributes
//	<P>STATE#<key>      <P>STATE  a small value (offset, …)     value
//	<P>SEEN#<id>        <P>SEEN   a handled delivery            seen_at, expires_at; gsi1pk <P>SEEN, gsi1sk <ms:015>#<id>
//	<P>USER#<user>      <P>USER   a user let in by a code       code_hash, added_at
//	<P>CODE#<hash>      <P>CODE   claim of a used access code   user_id
//	<P>TRY#<from>       <P>TRY    a conversation's code tries   tries, lockouts, locked_until (absent: none), version
//	<P>OUT#<id>         <P>OUT    a message in the outbox       to, text, buttons, status, attempts, next_at, last_error,
//	                                                            message_id, claim, claimed_until, expires_at;
//	                                                            gsi1pk <P>OUT#<status>, gsi1sk <order:020>
//
// Seen deliveries expire (TTL) ChannelSeenTTL after they were handled,
// sent messages ChannelSentTTL after they were sent; failed messages
// stay. ClaimOutbox claims a message with a conditional update, so that
// of two functions flushing the outbox at once (a webhook and a step) one
// sends it. Telegram's items before other channels came (chat_id and
// message_id as numbers) read alike.
const (
	// ChannelSeenTTL is how long a handled delivery id is remembered;
	// the platforms give up redelivering well before.
	ChannelSeenTTL = 7 * 24 * time.Hour
	// ChannelSentTTL is how long a delivered message is kept.
	ChannelSentTTL = 30 * 24 * time.Hour
)

// channelName is what a channel's name may be: it begins its items' keys.
// Compiled on first use: a command that opens no channel never needs it.
var channelName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{1,16}$`) })

// ChannelStore is a messaging channel's durable state in the table.
type ChannelStore struct {
	s *Store
	// p begins the keys of the channel's items.
	p string
}

var _ store.Channel = ChannelStore{}

// Channel returns the store of the channel name ("tg", "slack", …), which
// is one to sixteen lowercase letters; another name panics.
func (s *Store) Channel(name string) store.Channel {
	if !channelName().MatchString(name) {
		panic(fmt.Sprintf("dynamo: channel name %q is not 1-16 lowercase letters", name))
	}
	return ChannelStore{s, strings.ToUpper(name)}
}

func (t ChannelStore) name() string { return strings.ToLower(t.p) }

// key returns the key of the channel's item of kind and id.
func (t ChannelStore) key(kind, id string) item { return key(t.p+kind+"#"+id, t.p+kind) }

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

// outGSI is the gsi1 partition of the outbox messages of prefix p in
// status.
func outGSI(p, status string) string { return p + "OUT#" + status }

// State implements store.Channel.
func (t ChannelStore) State(ctx context.Context, k string) (string, error) {
	it, err := t.s.getItem(ctx, t.key("STATE", k))
	if err != nil {
		return "", fmt.Errorf("dynamo: %s state %q: %w", t.name(), k, err)
	}
	return getS(it, "value"), nil
}

// SetState implements store.Channel.
func (t ChannelStore) SetState(ctx context.Context, k, value string) error {
	it := t.key("STATE", k)
	it["value"] = attrS(value)
	if _, err := t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it}); err != nil {
		return fmt.Errorf("dynamo: set %s state %q: %w", t.name(), k, err)
	}
	return nil
}

// Seen implements store.Channel.
func (t ChannelStore) Seen(ctx context.Context, id string) (bool, error) {
	it, err := t.s.getItem(ctx, t.key("SEEN", id))
	if err != nil {
		return false, fmt.Errorf("dynamo: %s seen: %w", t.name(), err)
	}
	// TTL deletes lazily: an expired item may still be there.
	return it != nil && getN(it, attrExpiresAt) > t.s.now().Unix(), nil
}

// MarkSeen implements store.Channel; the first mark of a delivery stays.
func (t ChannelStore) MarkSeen(ctx context.Context, id string, at time.Time) error {
	it := t.key("SEEN", id)
	it["seen_at"] = attrTime(at)
	it[attrExpiresAt] = attrN(at.Add(ChannelSeenTTL).Unix())
	it[attrGSI1PK] = attrS(t.p + "SEEN")
	it[attrGSI1SK] = attrS(msKey(at) + "#" + id)
	_, err := t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if _, ok := condFailed(err); err != nil && !ok {
		return fmt.Errorf("dynamo: %s mark seen: %w", t.name(), err)
	}
	return nil
}

// PruneSeen implements store.Channel. TTL removes seen deliveries anyway;
// this removes them sooner.
func (t ChannelStore) PruneSeen(ctx context.Context, before time.Time) error {
	p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
		TableName: t.s.table, IndexName: aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :pk AND gsi1sk < :before"),
		ExpressionAttributeValues: item{":pk": attrS(t.p + "SEEN"), ":before": attrS(msKey(before))},
		ProjectionExpression:      aws.String("pk, sk"),
	})
	var keys []item
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("dynamo: %s prune seen: %w", t.name(), err)
		}
		for _, it := range out.Items {
			keys = append(keys, key(getS(it, attrPK), getS(it, attrSK)))
		}
	}
	if err := t.s.deleteKeys(ctx, keys); err != nil {
		return fmt.Errorf("dynamo: %s prune seen: %w", t.name(), err)
	}
	return nil
}

// AllowedUser implements store.Channel.
func (t ChannelStore) AllowedUser(ctx context.Context, user string) (bool, error) {
	it, err := t.s.getItem(ctx, t.key("USER", user))
	if err != nil {
		return false, fmt.Errorf("dynamo: %s user: %w", t.name(), err)
	}
	return it != nil, nil
}

// RedeemCode implements store.Channel: the code's claim and the user are
// written together, each only when new, so a code lets one user in, once.
func (t ChannelStore) RedeemCode(ctx context.Context, codeHash, uid string, at time.Time) (bool, error) {
	claim := t.key("CODE", codeHash)
	claim["user_id"] = attrS(uid)
	user := t.key("USER", uid)
	user["code_hash"] = attrS(codeHash)
	user["added_at"] = attrTime(at)
	cond := "attribute_not_exists(pk)"
	err := t.s.transact(ctx, []dynamodb.TransactWriteItem{t.s.put(claim, cond), t.s.put(user, cond)})
	if _, ok := canceledAt(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: %s redeem code: %w", t.name(), err)
	}
	return true, nil
}

// CodeTries implements store.Channel.
func (t ChannelStore) CodeTries(ctx context.Context, from string) (store.CodeTries, error) {
	it, err := t.s.getItem(ctx, t.key("TRY", from))
	if err != nil {
		return store.CodeTries{}, fmt.Errorf("dynamo: %s code tries: %w", t.name(), err)
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

// SetCodeTries implements store.Channel with a conditional put.
func (t ChannelStore) SetCodeTries(ctx context.Context, from string, prev int64, next store.CodeTries) (bool, error) {
	it := t.key("TRY", from)
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
		return false, fmt.Errorf("dynamo: set %s code tries: %w", t.name(), err)
	}
	return true, nil
}

// AddOutbox implements store.Channel.
func (t ChannelStore) AddOutbox(ctx context.Context, msgs []store.OutboxMessage) error {
	now := t.s.now()
	for _, m := range msgs {
		m.Channel = t.name()
		it, err := outboxItem(m, now)
		if err != nil {
			return err
		}
		_, err = t.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: t.s.table, Item: it,
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if _, ok := condFailed(err); err != nil && !ok {
			return fmt.Errorf("dynamo: %s outbox: %w", t.name(), err)
		}
	}
	return nil
}

// outboxItem is the item of m, pending, in its channel's outbox:
// AddOutbox's, and those of a run's commit (Store.CommitRun).
func outboxItem(m store.OutboxMessage, now time.Time) (item, error) {
	if !channelName().MatchString(m.Channel) {
		return nil, fmt.Errorf("outbox message %s: channel %q is not 1-16 lowercase letters", m.ID, m.Channel)
	}
	p := strings.ToUpper(m.Channel)
	it := key(p+"OUT#"+m.ID, p+"OUT")
	it["id"] = attrS(m.ID)
	it["to"] = attrS(m.To)
	it["text"] = attrS(m.Text)
	if len(m.Buttons) > 0 {
		b, err := json.Marshal(m.Buttons)
		if err != nil {
			return nil, fmt.Errorf("outbox message %s: %w", m.ID, err)
		}
		it["buttons"] = attrS(string(b))
	}
	it["status"] = attrS(store.OutboxPending)
	it["attempts"] = attrN(0)
	it["next_at"] = attrTime(orNow(m.NextAt, now))
	it["created_at"] = attrTime(orNow(m.CreatedAt, now))
	it[attrGSI1PK] = attrS(outGSI(p, store.OutboxPending))
	it[attrGSI1SK] = attrS(nextOrder())
	return it, checkSize(m.Channel+" message "+m.ID, it)
}

// UnsentOutbox implements store.Channel. It reads the pending messages
// from gsi1 in order (the index may lag: ClaimOutbox reads the table).
func (t ChannelStore) UnsentOutbox(ctx context.Context, limit int) ([]store.OutboxMessage, error) {
	if limit <= 0 {
		return nil, nil
	}
	p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
		TableName: t.s.table, IndexName: aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(outGSI(t.p, store.OutboxPending))},
		Limit:                     aws.Int32(int32(min(limit, 1000))),
	})
	var out []store.OutboxMessage
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: %s outbox: %w", t.name(), err)
		}
		for _, it := range page.Items {
			if len(out) < limit {
				m, err := t.outMessage(it)
				if err != nil {
					return nil, fmt.Errorf("dynamo: %s outbox: %w", t.name(), err)
				}
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// outMessage is the message of an outbox item; Telegram's items before
// other channels came hold chat_id and message_id as numbers.
func (t ChannelStore) outMessage(it item) (store.OutboxMessage, error) {
	m := store.OutboxMessage{
		ID: getS(it, "id"), Channel: t.name(), To: getS(it, "to"), Text: getS(it, "text"), Status: getS(it, "status"),
		Attempts: int(getN(it, "attempts")), NextAt: getTime(it, "next_at"), MessageID: getS(it, "message_id"),
		LastError: getS(it, "last_error"), CreatedAt: getTime(it, "created_at"),
	}
	if _, ok := it["chat_id"]; ok && m.To == "" {
		m.To = strconv.FormatInt(getN(it, "chat_id"), 10)
	}
	if b := getS(it, "buttons"); b != "" {
		if err := json.Unmarshal([]byte(b), &m.Buttons); err != nil {
			return m, fmt.Errorf("message %s: buttons: %w", m.ID, err)
		}
	}
	if until := getTimePtr(it, "claimed_until"); until != nil {
		m.ClaimedUntil = *until
	}
	return m, nil
}

// ClaimOutbox implements store.Channel.
func (t ChannelStore) ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error) {
	if claim == "" {
		return store.OutboxMessage{}, false, fmt.Errorf("dynamo: %s claim: no claim id", t.name())
	}
	res, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: t.key("OUT", id),
		UpdateExpression: aws.String("SET claim = :claim, claimed_until = :until"),
		ConditionExpression: aws.String("#st = :pending AND next_at <= :now AND " +
			"(attribute_not_exists(claimed_until) OR claimed_until <= :now)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":claim": attrS(claim), ":until": attrTime(until),
			":now": attrTime(now), ":pending": attrS(store.OutboxPending)},
		ReturnValues: dynamodb.ReturnValueAllNew,
	})
	if _, ok := condFailed(err); ok {
		return store.OutboxMessage{}, false, nil
	}
	if err != nil {
		return store.OutboxMessage{}, false, fmt.Errorf("dynamo: %s claim: %w", t.name(), err)
	}
	m, err := t.outMessage(res.Attributes)
	if err != nil {
		return m, false, fmt.Errorf("dynamo: %s claim: %w", t.name(), err)
	}
	return m, true, nil
}

// MarkSent implements store.Channel.
func (t ChannelStore) MarkSent(ctx context.Context, id, messageID string, at time.Time) error {
	_, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: t.key("OUT", id),
		UpdateExpression: aws.String("SET #st = :sent, message_id = :mid, sent_at = :at, attempts = attempts + :one, " +
			"gsi1pk = :gsi, expires_at = :exp REMOVE claim, claimed_until"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":sent": attrS(store.OutboxSent), ":mid": attrS(messageID), ":at": attrTime(at),
			":one": attrN(1), ":gsi": attrS(outGSI(t.p, store.OutboxSent)), ":exp": attrN(at.Add(ChannelSentTTL).Unix())},
	})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("dynamo: %s mark sent: no message %q", t.name(), id)
	}
	if err != nil {
		return fmt.Errorf("dynamo: %s mark sent: %w", t.name(), err)
	}
	return nil
}

// MarkRetry implements store.Channel; a message no longer pending, or
// claimed by another claim, is left as it is.
func (t ChannelStore) MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error {
	if claim == "" {
		return fmt.Errorf("dynamo: %s mark retry: no claim id", t.name())
	}
	status := store.OutboxPending
	if failed {
		status = store.OutboxFailed
	}
	_, err := t.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: t.s.table, Key: t.key("OUT", id),
		UpdateExpression:         aws.String("SET #st = :st, attempts = :n, next_at = :next, last_error = :err, gsi1pk = :gsi REMOVE claim, claimed_until"),
		ConditionExpression:      aws.String("#st = :pending AND claim = :claim"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":st": attrS(status), ":n": attrN(int64(attempts)), ":next": attrTime(next),
			":err": attrS(lastErr), ":gsi": attrS(outGSI(t.p, status)), ":pending": attrS(store.OutboxPending), ":claim": attrS(claim)},
	})
	if _, ok := condFailed(err); err != nil && !ok {
		return fmt.Errorf("dynamo: %s mark retry: %w", t.name(), err)
	}
	return nil
}

// OutboxStats implements store.Channel: it counts gsi1's partitions of
// the channel's outbox (eventually consistent; sent messages of the last
// ChannelSentTTL).
func (t ChannelStore) OutboxStats(ctx context.Context) (store.OutboxStats, error) {
	var st store.OutboxStats
	for status, n := range map[string]*int{store.OutboxPending: &st.Pending, store.OutboxSent: &st.Sent, store.OutboxFailed: &st.Failed} {
		p := dynamodb.NewQueryPaginator(t.s.db, &dynamodb.QueryInput{
			TableName: t.s.table, IndexName: aws.String(indexGSI1), Select: dynamodb.SelectCount,
			KeyConditionExpression:    aws.String("gsi1pk = :pk"),
			ExpressionAttributeValues: item{":pk": attrS(outGSI(t.p, status))},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return st, fmt.Errorf("dynamo: %s outbox stats: %w", t.name(), err)
			}
			*n += int(out.Count)
		}
	}
	return st, nil
}
