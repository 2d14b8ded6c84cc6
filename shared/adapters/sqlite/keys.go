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

// scanKey reads the keyColumns of one row.
func scanKey(sc scanner) (store.APIKey, error) {
	var k store.APIKey
	var agents, deny sql.NullString
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &agents, &k.Autonomy, &k.RatePerMinute, &k.Admin, &created, &revoked,
		&k.DailyTokens, &k.MonthlyTokens, &deny); err != nil {
		return store.APIKey{}, err
	}
	for _, l := range []struct {
		col sql.NullString
		to  *[]string
	}{{agents, &k.Agents}, {deny, &k.DenyTools}} {
		if l.col.Valid {
			if err := json.Unmarshal([]byte(l.col.String), l.to); err != nil {
				return store.APIKey{}, fmt.Errorf("decode key lists: %w", err)
			}
		}
	}
	k.CreatedAt = fromMillis(created)
	if revoked.Valid {
		t := fromMillis(revoked.Int64)
		k.RevokedAt = &t
	}
	return k, nil
}

// CreateKey stores k. It returns store.ErrExists when the id or the hash
// is taken. A zero CreatedAt is set to now.
func (db *DB) CreateKey(ctx context.Context, k store.APIKey) error {
	agents, err := encodeList(k.Agents)
	if err != nil {
		return fmt.Errorf("sqlite: create key %q: encode agents: %w", k.ID, err)
	}
	deny, err := encodeList(k.DenyTools)
	if err != nil {
		return fmt.Errorf("sqlite: create key %q: encode denied tools: %w", k.ID, err)
	}
	var revoked sql.NullInt64
	if k.RevokedAt != nil {
		revoked = sql.NullInt64{Int64: toMillis(*k.RevokedAt), Valid: true}
	}
	created := orNow(k.CreatedAt, time.Now())
	err = changeOne(ctx, &db.st.createKey, store.ErrExists, k.ID, k.Name, k.Hash, k.Prefix, agents, k.Autonomy,
		k.RatePerMinute, k.Admin, toMillis(created), revoked, k.DailyTokens, k.MonthlyTokens, deny)
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("sqlite: create key %q: id or hash: %w", k.ID, err)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create key %q: %w", k.ID, err)
	}
	return nil
}

// KeyByHash finds a key by the hash of its secret, revoked or not, or
// returns store.ErrNotFound.
func (db *DB) KeyByHash(ctx context.Context, hash string) (store.APIKey, error) {
	k, err := scanKey(db.st.keyByHash.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		// The hash is a credential's digest: keep it out of the message.
		return store.APIKey{}, fmt.Errorf("sqlite: key by hash: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.APIKey{}, fmt.Errorf("sqlite: key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns every key, oldest first.
func (db *DB) ListKeys(ctx context.Context) ([]store.APIKey, error) {
	rows, err := db.st.listKeys.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var keys []store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list keys: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	return keys, nil
}

// RevokeKey marks a key revoked at the given time (now if zero); a key
// already revoked keeps its first revocation time. It is
// store.ErrNotFound for an unknown id.
func (db *DB) RevokeKey(ctx context.Context, id string, at time.Time) error {
	if err := changeOne(ctx, &db.st.revokeKey, store.ErrNotFound, toMillis(orNow(at, time.Now())), id); err != nil {
		return fmt.Errorf("sqlite: revoke key %q: %w", id, err)
	}
	return nil
}
