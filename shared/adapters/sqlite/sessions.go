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

// CreateSession stores s unless its id exists; it returns store.ErrExists
// then. Zero times are set to now.
func (db *DB) CreateSession(ctx context.Context, s store.Session) error {
	created := orNow(s.CreatedAt, time.Now())
	updated := orNow(s.UpdatedAt, created)
	allow, err := encodeList(s.Allowlist)
	if err != nil {
		return fmt.Errorf("sqlite: create session %q: encode allowlist: %w", s.ID, err)
	}
	if err := changeOne(ctx, &db.st.createSession, store.ErrExists, s.ID, s.Agent, s.Owner, s.Channel, s.Ephemeral, allow, toMillis(created), toMillis(updated)); err != nil {
		return fmt.Errorf("sqlite: create session %q: %w", s.ID, err)
	}
	return nil
}

// GetSession returns a session, or store.ErrNotFound.
func (db *DB) GetSession(ctx context.Context, id string) (store.Session, error) {
	s := store.Session{ID: id}
	var allow sql.NullString
	var created, updated int64
	err := db.st.getSession.QueryRowContext(ctx, id).Scan(&s.Agent, &s.Owner, &s.Channel, &s.Ephemeral, &allow, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("sqlite: get session %q: %w", id, store.ErrNotFound)
	}
	if err == nil {
		err = finishSession(&s, allow, created, updated)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlite: get session %q: %w", id, err)
	}
	return s, nil
}

// finishSession decodes the allowlist and times of a session row.
func finishSession(s *store.Session, allow sql.NullString, created, updated int64) error {
	var err error
	if s.Allowlist, err = decodeList(allow); err != nil {
		return fmt.Errorf("decode allowlist: %w", err)
	}
	s.CreatedAt, s.UpdatedAt = fromMillis(created), fromMillis(updated)
	return nil
}

// SessionsOf implements store.OwnerSessions.
func (db *DB) SessionsOf(ctx context.Context, owner string, limit int) ([]store.Session, error) {
	list, err := listSessions(ctx, &db.st.sessionsOf, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sessions of %q: %w", owner, err)
	}
	return list, nil
}

// ChannelSessions implements store.OwnerSessions.
func (db *DB) ChannelSessions(ctx context.Context, channel string, limit int) ([]store.Session, error) {
	list, err := listSessions(ctx, &db.st.chSessions, channel, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: sessions of channel %q: %w", channel, err)
	}
	return list, nil
}

// listSessions runs a query of sessions, st, with its two arguments.
func listSessions(ctx context.Context, st *stmt, arg string, limit int) ([]store.Session, error) {
	rows, err := st.QueryContext(ctx, arg, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []store.Session
	for rows.Next() {
		var s store.Session
		var allow sql.NullString
		var created, updated int64
		err := rows.Scan(&s.ID, &s.Agent, &s.Owner, &s.Channel, &s.Ephemeral, &allow, &created, &updated)
		if err == nil {
			err = finishSession(&s, allow, created, updated)
		}
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, rows.Err()
}

// DeleteSession removes the session with its history, runs, approvals,
// responses and personal data tokens, in one transaction. Deleting a missing session is not an
// error, so a retried cleanup succeeds.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	deletes := []*stmt{&db.st.deleteSessMsgs, &db.st.deleteSessRuns, &db.st.deleteSessAppr, &db.st.deleteSessResp, &db.st.deleteSessPII, &db.st.deleteSession}
	tx, err := begin(ctx, db.w, deletes...)
	if err != nil {
		return fmt.Errorf("sqlite: delete session %q: begin: %w", id, err)
	}
	defer tx.Rollback()
	for _, st := range deletes {
		if _, err := st.in(ctx, tx).ExecContext(ctx, id); err != nil {
			return fmt.Errorf("sqlite: delete session %q: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete session %q: commit: %w", id, err)
	}
	db.hist.drop(id)
	return nil
}

// AllowTool adds a tool to the session's allowlist in one statement;
// adding one twice keeps one. It is store.ErrNotFound for an unknown
// session.
func (db *DB) AllowTool(ctx context.Context, sessionID, tool string) error {
	if err := changeOne(ctx, &db.st.allowTool, store.ErrNotFound, sessionID, tool); err != nil {
		return fmt.Errorf("sqlite: allow tool %q in session %q: %w", tool, sessionID, err)
	}
	return nil
}

// encodeList stores a string list as a JSON array, or NULL when empty.
func encodeList(list []string) (sql.NullString, error) {
	if len(list) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// decodeList reads a list stored by encodeList.
func decodeList(s sql.NullString) ([]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(s.String), &list); err != nil {
		return nil, err
	}
	return list, nil
}

// AppendMessage stores m unless its (session, key) exists, and reports
// whether it wrote. The session must exist; if it does not, the error wraps
// store.ErrNotFound. A zero CreatedAt is set to now.
func (db *DB) AppendMessage(ctx context.Context, m store.Message) (bool, error) {
	body, err := json.Marshal(m.Message)
	if err != nil {
		return false, fmt.Errorf("sqlite: append message %q/%q: encode: %w", m.SessionID, m.Key, err)
	}
	created := orNow(m.CreatedAt, time.Now())
	wrote, err := changed(ctx, &db.st.appendMessage, m.SessionID, m.Key, m.RunID, string(body), toMillis(created))
	if isForeignKeyError(err) {
		return false, fmt.Errorf("sqlite: append message %q/%q: session: %w", m.SessionID, m.Key, store.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: append message %q/%q: %w", m.SessionID, m.Key, err)
	}
	return wrote, nil
}

// GetMessage returns one message by key, or store.ErrNotFound.
func (db *DB) GetMessage(ctx context.Context, sessionID, key string) (store.Message, error) {
	m := store.Message{SessionID: sessionID, Key: key}
	var body sql.RawBytes
	var created int64
	rows, err := db.st.getMessage.QueryContext(ctx, sessionID, key)
	if err != nil {
		return store.Message{}, fmt.Errorf("sqlite: get message %q/%q: %w", sessionID, key, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.Message{}, fmt.Errorf("sqlite: get message %q/%q: %w", sessionID, key, err)
		}
		return store.Message{}, fmt.Errorf("sqlite: get message %q/%q: %w", sessionID, key, store.ErrNotFound)
	}
	if err := rows.Scan(&m.RunID, &body, &created); err != nil {
		return store.Message{}, fmt.Errorf("sqlite: get message %q/%q: %w", sessionID, key, err)
	}
	if err := json.Unmarshal(body, &m.Message); err != nil {
		return store.Message{}, fmt.Errorf("sqlite: get message %q/%q: decode: %w", sessionID, key, err)
	}
	m.CreatedAt = fromMillis(created)
	return m, rows.Close()
}

// Messages returns the history of a session ordered by key; a session
// without history, or an unknown one, has none. It keeps the history it
// read (histories), and reads only the messages after it while the
// session's history version says that nothing but those was written.
func (db *DB) Messages(ctx context.Context, sessionID string) ([]store.Message, error) {
	kept, ok := db.hist.get(sessionID)
	after := ""
	if ok && len(kept.msgs) > 0 {
		after = kept.msgs[len(kept.msgs)-1].Key
	}
	version, msgs, found, err := db.history(ctx, sessionID, after)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sqlite: messages of %q: %w", sessionID, err)
	case !found:
		return nil, nil
	case ok && version == kept.version:
		msgs = append(kept.msgs, msgs...)
	case after != "":
		// Changed otherwise: read it all again.
		if version, msgs, found, err = db.history(ctx, sessionID, ""); err != nil {
			return nil, fmt.Errorf("sqlite: messages of %q: %w", sessionID, err)
		} else if !found {
			return nil, nil
		}
	}
	db.hist.put(sessionID, version, msgs)
	return msgs, nil
}

// history reads, in one statement and so from one snapshot, the
// session's history version and its messages with keys after after;
// found is false for an unknown session.
func (db *DB) history(ctx context.Context, sessionID, after string) (version int64, msgs []store.Message, found bool, err error) {
	rows, err := db.st.history.QueryContext(ctx, after, sessionID)
	if err != nil {
		return 0, nil, false, err
	}
	defer rows.Close()
	var key, runID sql.NullString
	var body sql.RawBytes
	var created sql.NullInt64
	for rows.Next() {
		found = true
		if err := rows.Scan(&version, &key, &runID, &body, &created); err != nil {
			return 0, nil, false, err
		}
		if !key.Valid {
			continue // no message after after: the session's row alone
		}
		m := store.Message{SessionID: sessionID, Key: key.String, RunID: runID.String, CreatedAt: fromMillis(created.Int64)}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return 0, nil, false, fmt.Errorf("decode %q: %w", m.Key, err)
		}
		msgs = append(msgs, m)
	}
	return version, msgs, found, rows.Err()
}

// RunMessages returns the messages of one run of a session, ordered by
// key.
func (db *DB) RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error) {
	rows, err := db.st.runMessages.QueryContext(ctx, sessionID, store.RunPrefix(seq), store.RunPrefix(seq+1))
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages of run %d of %q: %w", seq, sessionID, err)
	}
	out, err := scanMessages(rows, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages of run %d of %q: %w", seq, sessionID, err)
	}
	return out, nil
}

// scanMessages reads and closes rows of key, run_id, body, created_at.
func scanMessages(rows *sql.Rows, sessionID string) ([]store.Message, error) {
	defer rows.Close()
	var out []store.Message
	var body sql.RawBytes
	for rows.Next() {
		m := store.Message{SessionID: sessionID}
		var created int64
		if err := rows.Scan(&m.Key, &m.RunID, &body, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(body, &m.Message); err != nil {
			return nil, fmt.Errorf("decode %q: %w", m.Key, err)
		}
		m.CreatedAt = fromMillis(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// DeleteMessages removes the given keys of a session in one statement;
// missing keys are ignored.
func (db *DB) DeleteMessages(ctx context.Context, sessionID string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	list, err := json.Marshal(keys)
	if err != nil {
		return fmt.Errorf("sqlite: delete messages of %q: encode keys: %w", sessionID, err)
	}
	if _, err := db.st.deleteMessages.ExecContext(ctx, sessionID, string(list)); err != nil {
		return fmt.Errorf("sqlite: delete messages of %q: %w", sessionID, err)
	}
	return nil
}
