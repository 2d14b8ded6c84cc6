package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// ChannelStore is a messaging channel's durable state in the database:
// the rows of the channel_* tables whose channel is its name.
type ChannelStore struct {
	db   *DB
	name string
}

var _ store.Channel = ChannelStore{}

// Channel returns the store of the channel name ("tg", "slack", …).
func (db *DB) Channel(name string) store.Channel { return ChannelStore{db, name} }

// State implements store.Channel.
func (s ChannelStore) State(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.r.QueryRowContext(ctx, `SELECT value FROM channel_state WHERE channel = ? AND key = ?`, s.name, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: %s state %q: %w", s.name, key, err)
	}
	return v, nil
}

// SetState implements store.Channel.
func (s ChannelStore) SetState(ctx context.Context, key, value string) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO channel_state (channel, key, value) VALUES (?, ?, ?)
		ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value`, s.name, key, value)
	if err != nil {
		return fmt.Errorf("sqlite: set %s state %q: %w", s.name, key, err)
	}
	return nil
}

// Seen implements store.Channel.
func (s ChannelStore) Seen(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM channel_seen WHERE channel = ? AND id = ?`, s.name, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlite: %s seen: %w", s.name, err)
	}
	return n > 0, nil
}

// MarkSeen implements store.Channel.
func (s ChannelStore) MarkSeen(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO channel_seen (channel, id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		s.name, id, toMillis(at))
	if err != nil {
		return fmt.Errorf("sqlite: %s mark seen: %w", s.name, err)
	}
	return nil
}

// PruneSeen implements store.Channel.
func (s ChannelStore) PruneSeen(ctx context.Context, before time.Time) error {
	if _, err := s.db.w.ExecContext(ctx, `DELETE FROM channel_seen WHERE channel = ? AND seen_at < ?`, s.name, toMillis(before)); err != nil {
		return fmt.Errorf("sqlite: %s prune seen: %w", s.name, err)
	}
	return nil
}

// AllowedUser implements store.Channel.
func (s ChannelStore) AllowedUser(ctx context.Context, user string) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM channel_users WHERE channel = ? AND user_id = ?`, s.name, user).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlite: %s user: %w", s.name, err)
	}
	return n > 0, nil
}

// RedeemCode implements store.Channel: a code lets one user in, once.
func (s ChannelStore) RedeemCode(ctx context.Context, codeHash, user string, at time.Time) (bool, error) {
	res, err := s.db.w.ExecContext(ctx, `INSERT INTO channel_users (channel, user_id, code_hash, added_at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, s.name, user, codeHash, toMillis(at))
	if err != nil {
		return false, fmt.Errorf("sqlite: %s redeem code: %w", s.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: %s redeem code: %w", s.name, err)
	}
	return n == 1, nil
}

// CodeTries implements store.Channel.
func (s ChannelStore) CodeTries(ctx context.Context, from string) (store.CodeTries, error) {
	var c store.CodeTries
	var until int64
	err := s.db.r.QueryRowContext(ctx, `SELECT tries, lockouts, locked_until, version FROM channel_code_tries
		WHERE channel = ? AND from_id = ?`, s.name, from).Scan(&c.Tries, &c.Lockouts, &until, &c.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return store.CodeTries{}, nil
	}
	if err != nil {
		return store.CodeTries{}, fmt.Errorf("sqlite: %s code tries: %w", s.name, err)
	}
	if until != 0 {
		c.LockedUntil = fromMillis(until)
	}
	return c, nil
}

// SetCodeTries implements store.Channel.
func (s ChannelStore) SetCodeTries(ctx context.Context, from string, prev int64, next store.CodeTries) (bool, error) {
	var until int64
	if !next.LockedUntil.IsZero() {
		until = toMillis(next.LockedUntil)
	}
	var res sql.Result
	var err error
	if prev == 0 {
		res, err = s.db.w.ExecContext(ctx, `INSERT INTO channel_code_tries (channel, from_id, tries, lockouts, locked_until, version)
			VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`, s.name, from, next.Tries, next.Lockouts, until)
	} else {
		res, err = s.db.w.ExecContext(ctx, `UPDATE channel_code_tries SET tries = ?, lockouts = ?, locked_until = ?, version = version + 1
			WHERE channel = ? AND from_id = ? AND version = ?`, next.Tries, next.Lockouts, until, s.name, from, prev)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: set %s code tries: %w", s.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: set %s code tries: %w", s.name, err)
	}
	return n == 1, nil
}

// AddOutbox implements store.Channel.
func (s ChannelStore) AddOutbox(ctx context.Context, msgs []store.OutboxMessage) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %s outbox: %w", s.name, err)
	}
	defer tx.Rollback()
	for i := range msgs {
		msgs[i].Channel = s.name
	}
	if err := addOutbox(ctx, tx, msgs, time.Now()); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s outbox: %w", s.name, err)
	}
	return nil
}

// addOutbox stores msgs as pending within tx, each in its channel's
// outbox, keeping existing ids as they are: AddOutbox, and the outbox of
// a run's commit.
func addOutbox(ctx context.Context, tx *sql.Tx, msgs []store.OutboxMessage, now time.Time) error {
	for _, m := range msgs {
		if m.Channel == "" {
			return fmt.Errorf("outbox message %s: no channel", m.ID)
		}
		var buttons []byte
		if len(m.Buttons) > 0 {
			var err error
			if buttons, err = json.Marshal(m.Buttons); err != nil {
				return fmt.Errorf("%s outbox: %w", m.Channel, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO channel_outbox (channel, id, recipient, text, buttons, status, next_at, created_at)
			VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (channel, id) DO NOTHING`,
			m.Channel, m.ID, m.To, m.Text, string(buttons), toMillis(orNow(m.NextAt, now)), toMillis(orNow(m.CreatedAt, now))); err != nil {
			return fmt.Errorf("%s outbox: %w", m.Channel, err)
		}
	}
	return nil
}

// UnsentOutbox implements store.Channel.
func (s ChannelStore) UnsentOutbox(ctx context.Context, limit int) ([]store.OutboxMessage, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+outboxColumns+`
		FROM channel_outbox WHERE channel = ? AND status = 'pending' ORDER BY n LIMIT ?`, s.name, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s outbox: %w", s.name, err)
	}
	defer rows.Close()
	var out []store.OutboxMessage
	for rows.Next() {
		m, err := scanOutbox(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s outbox: %w", s.name, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s outbox: %w", s.name, err)
	}
	return out, nil
}

// outboxColumns are the columns scanOutbox reads.
const outboxColumns = "id, channel, recipient, text, buttons, status, attempts, next_at, message_id, last_error, created_at, claimed_until"

// scanOutbox reads a message of outboxColumns.
func scanOutbox(row interface{ Scan(...any) error }) (store.OutboxMessage, error) {
	var m store.OutboxMessage
	var buttons string
	var next, created, claimed int64
	if err := row.Scan(&m.ID, &m.Channel, &m.To, &m.Text, &buttons, &m.Status, &m.Attempts, &next, &m.MessageID, &m.LastError,
		&created, &claimed); err != nil {
		return m, err
	}
	if buttons != "" {
		if err := json.Unmarshal([]byte(buttons), &m.Buttons); err != nil {
			return m, fmt.Errorf("message %s: buttons: %w", m.ID, err)
		}
	}
	m.NextAt, m.CreatedAt = fromMillis(next), fromMillis(created)
	if claimed != 0 {
		m.ClaimedUntil = fromMillis(claimed)
	}
	return m, nil
}

// ClaimOutbox implements store.Channel.
func (s ChannelStore) ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error) {
	if claim == "" {
		return store.OutboxMessage{}, false, fmt.Errorf("sqlite: %s claim: no claim id", s.name)
	}
	m, err := scanOutbox(s.db.w.QueryRowContext(ctx, `UPDATE channel_outbox SET claim = ?, claimed_until = ?
		WHERE channel = ? AND id = ? AND status = 'pending' AND next_at <= ? AND claimed_until <= ?
		RETURNING `+outboxColumns, claim, toMillis(until), s.name, id, toMillis(now), toMillis(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OutboxMessage{}, false, nil
	}
	if err != nil {
		return store.OutboxMessage{}, false, fmt.Errorf("sqlite: %s claim: %w", s.name, err)
	}
	return m, true, nil
}

// MarkSent implements store.Channel.
func (s ChannelStore) MarkSent(ctx context.Context, id, messageID string, at time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE channel_outbox SET status = 'sent', message_id = ?, sent_at = ?, attempts = attempts + 1,
		claim = '', claimed_until = 0 WHERE channel = ? AND id = ?`, messageID, toMillis(at), s.name, id)
	if err != nil {
		return fmt.Errorf("sqlite: %s mark sent: %w", s.name, err)
	}
	return nil
}

// MarkRetry implements store.Channel.
func (s ChannelStore) MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error {
	if claim == "" {
		return fmt.Errorf("sqlite: %s mark retry: no claim id", s.name)
	}
	status := store.OutboxPending
	if failed {
		status = store.OutboxFailed
	}
	_, err := s.db.w.ExecContext(ctx, `UPDATE channel_outbox SET status = ?, attempts = ?, next_at = ?, last_error = ?, claim = '', claimed_until = 0
		WHERE channel = ? AND id = ? AND status = 'pending' AND claim = ?`,
		status, attempts, toMillis(next), lastErr, s.name, id, claim)
	if err != nil {
		return fmt.Errorf("sqlite: %s mark retry: %w", s.name, err)
	}
	return nil
}

// OutboxStats implements store.Channel.
func (s ChannelStore) OutboxStats(ctx context.Context) (store.OutboxStats, error) {
	var st store.OutboxStats
	rows, err := s.db.r.QueryContext(ctx, `SELECT status, count(*) FROM channel_outbox WHERE channel = ? GROUP BY status`, s.name)
	if err != nil {
		return st, fmt.Errorf("sqlite: %s outbox stats: %w", s.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return st, fmt.Errorf("sqlite: %s outbox stats: %w", s.name, err)
		}
		switch status {
		case store.OutboxPending:
			st.Pending = n
		case store.OutboxSent:
			st.Sent = n
		case store.OutboxFailed:
			st.Failed = n
		}
	}
	return st, rows.Err()
}
