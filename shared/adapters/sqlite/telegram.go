package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// TelegramStore is the Telegram channel's durable state in the database.
type TelegramStore struct{ db *DB }

var _ store.Telegram = TelegramStore{}

// Telegram returns the Telegram channel's store.
func (db *DB) Telegram() TelegramStore { return TelegramStore{db} }

// State implements store.Telegram.
func (s TelegramStore) State(ctx context.Context, key string) (string, error) {
	var v string
	err := s.db.r.QueryRowContext(ctx, `SELECT value FROM telegram_state WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: telegram state %q: %w", key, err)
	}
	return v, nil
}

// SetState implements store.Telegram.
func (s TelegramStore) SetState(ctx context.Context, key, value string) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO telegram_state (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("sqlite: set telegram state %q: %w", key, err)
	}
	return nil
}

// Seen implements store.Telegram.
func (s TelegramStore) Seen(ctx context.Context, updateID int64) (bool, error) {
	var n int
	err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM telegram_seen WHERE update_id = ?`, updateID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlite: telegram seen: %w", err)
	}
	return n > 0, nil
}

// MarkSeen implements store.Telegram.
func (s TelegramStore) MarkSeen(ctx context.Context, updateID int64, at time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO telegram_seen (update_id, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, updateID, toMillis(at))
	if err != nil {
		return fmt.Errorf("sqlite: telegram mark seen: %w", err)
	}
	return nil
}

// PruneSeen implements store.Telegram.
func (s TelegramStore) PruneSeen(ctx context.Context, before time.Time) error {
	if _, err := s.db.w.ExecContext(ctx, `DELETE FROM telegram_seen WHERE seen_at < ?`, toMillis(before)); err != nil {
		return fmt.Errorf("sqlite: telegram prune seen: %w", err)
	}
	return nil
}

// AllowedUser implements store.Telegram.
func (s TelegramStore) AllowedUser(ctx context.Context, userID int64) (bool, error) {
	var n int
	if err := s.db.r.QueryRowContext(ctx, `SELECT count(*) FROM telegram_users WHERE user_id = ?`, userID).Scan(&n); err != nil {
		return false, fmt.Errorf("sqlite: telegram user: %w", err)
	}
	return n > 0, nil
}

// RedeemCode implements store.Telegram: a code lets one user in, once.
func (s TelegramStore) RedeemCode(ctx context.Context, codeHash string, userID int64, at time.Time) (bool, error) {
	res, err := s.db.w.ExecContext(ctx, `INSERT INTO telegram_users (user_id, code_hash, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		userID, codeHash, toMillis(at))
	if err != nil {
		return false, fmt.Errorf("sqlite: telegram redeem code: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: telegram redeem code: %w", err)
	}
	return n == 1, nil
}

// CodeTries implements store.Telegram.
func (s TelegramStore) CodeTries(ctx context.Context, chatID int64) (store.CodeTries, error) {
	var c store.CodeTries
	var until int64
	err := s.db.r.QueryRowContext(ctx, `SELECT tries, lockouts, locked_until, version FROM telegram_code_tries WHERE chat_id = ?`, chatID).
		Scan(&c.Tries, &c.Lockouts, &until, &c.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return store.CodeTries{}, nil
	}
	if err != nil {
		return store.CodeTries{}, fmt.Errorf("sqlite: telegram code tries: %w", err)
	}
	if until != 0 {
		c.LockedUntil = fromMillis(until)
	}
	return c, nil
}

// SetCodeTries implements store.Telegram.
func (s TelegramStore) SetCodeTries(ctx context.Context, chatID int64, prev int64, next store.CodeTries) (bool, error) {
	var until int64
	if !next.LockedUntil.IsZero() {
		until = toMillis(next.LockedUntil)
	}
	var res sql.Result
	var err error
	if prev == 0 {
		res, err = s.db.w.ExecContext(ctx, `INSERT INTO telegram_code_tries (chat_id, tries, lockouts, locked_until, version)
			VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`, chatID, next.Tries, next.Lockouts, until)
	} else {
		res, err = s.db.w.ExecContext(ctx, `UPDATE telegram_code_tries SET tries = ?, lockouts = ?, locked_until = ?, version = version + 1
			WHERE chat_id = ? AND version = ?`, next.Tries, next.Lockouts, until, chatID, prev)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: set telegram code tries: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: set telegram code tries: %w", err)
	}
	return n == 1, nil
}

// AddOutbox implements store.Telegram.
func (s TelegramStore) AddOutbox(ctx context.Context, msgs []store.OutboxMessage) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: telegram outbox: %w", err)
	}
	defer tx.Rollback()
	if err := addOutbox(ctx, tx, msgs, time.Now()); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: telegram outbox: %w", err)
	}
	return nil
}

// addOutbox stores msgs as pending within tx, keeping existing ids as
// they are: AddOutbox, and the outbox of a run's commit.
func addOutbox(ctx context.Context, tx *sql.Tx, msgs []store.OutboxMessage, now time.Time) error {
	for _, m := range msgs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO telegram_outbox (id, chat_id, text, status, next_at, created_at)
			VALUES (?, ?, ?, 'pending', ?, ?) ON CONFLICT (id) DO NOTHING`,
			m.ID, m.ChatID, m.Text, toMillis(orNow(m.NextAt, now)), toMillis(orNow(m.CreatedAt, now))); err != nil {
			return fmt.Errorf("telegram outbox: %w", err)
		}
	}
	return nil
}

// UnsentOutbox implements store.Telegram.
func (s TelegramStore) UnsentOutbox(ctx context.Context, limit int) ([]store.OutboxMessage, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+outboxColumns+`
		FROM telegram_outbox WHERE status = 'pending' ORDER BY n LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: telegram outbox: %w", err)
	}
	defer rows.Close()
	var out []store.OutboxMessage
	for rows.Next() {
		m, err := scanOutbox(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: telegram outbox: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: telegram outbox: %w", err)
	}
	return out, nil
}

// outboxColumns are the columns scanOutbox reads.
const outboxColumns = "id, chat_id, text, status, attempts, next_at, last_error, created_at, claimed_until"

// scanOutbox reads a pending message of outboxColumns.
func scanOutbox(row interface{ Scan(...any) error }) (store.OutboxMessage, error) {
	var m store.OutboxMessage
	var next, created, claimed int64
	if err := row.Scan(&m.ID, &m.ChatID, &m.Text, &m.Status, &m.Attempts, &next, &m.LastError, &created, &claimed); err != nil {
		return m, err
	}
	m.NextAt, m.CreatedAt = fromMillis(next), fromMillis(created)
	if claimed != 0 {
		m.ClaimedUntil = fromMillis(claimed)
	}
	return m, nil
}

// ClaimOutbox implements store.Telegram.
func (s TelegramStore) ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error) {
	if claim == "" {
		return store.OutboxMessage{}, false, errors.New("sqlite: telegram claim: no claim id")
	}
	m, err := scanOutbox(s.db.w.QueryRowContext(ctx, `UPDATE telegram_outbox SET claim = ?, claimed_until = ?
		WHERE id = ? AND status = 'pending' AND next_at <= ? AND claimed_until <= ?
		RETURNING `+outboxColumns, claim, toMillis(until), id, toMillis(now), toMillis(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OutboxMessage{}, false, nil
	}
	if err != nil {
		return store.OutboxMessage{}, false, fmt.Errorf("sqlite: telegram claim: %w", err)
	}
	return m, true, nil
}

// MarkSent implements store.Telegram.
func (s TelegramStore) MarkSent(ctx context.Context, id string, messageID int64, at time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE telegram_outbox SET status = 'sent', message_id = ?, sent_at = ?, attempts = attempts + 1,
		claim = '', claimed_until = 0 WHERE id = ?`,
		messageID, toMillis(at), id)
	if err != nil {
		return fmt.Errorf("sqlite: telegram mark sent: %w", err)
	}
	return nil
}

// MarkRetry implements store.Telegram.
func (s TelegramStore) MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error {
	if claim == "" {
		return errors.New("sqlite: telegram mark retry: no claim id")
	}
	status := store.OutboxPending
	if failed {
		status = store.OutboxFailed
	}
	_, err := s.db.w.ExecContext(ctx, `UPDATE telegram_outbox SET status = ?, attempts = ?, next_at = ?, last_error = ?, claim = '', claimed_until = 0
		WHERE id = ? AND status = 'pending' AND claim = ?`,
		status, attempts, toMillis(next), lastErr, id, claim)
	if err != nil {
		return fmt.Errorf("sqlite: telegram mark retry: %w", err)
	}
	return nil
}

// OutboxStats implements store.Telegram.
func (s TelegramStore) OutboxStats(ctx context.Context) (store.OutboxStats, error) {
	var st store.OutboxStats
	rows, err := s.db.r.QueryContext(ctx, `SELECT status, count(*) FROM telegram_outbox GROUP BY status`)
	if err != nil {
		return st, fmt.Errorf("sqlite: telegram outbox stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return st, fmt.Errorf("sqlite: telegram outbox stats: %w", err)
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
