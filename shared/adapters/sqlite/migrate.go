package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// schema is the database at the latest migration, in one script: a new
// database is a copy of its image (image, which `go generate` makes from
// it), or made from it where the file system has no links; it parses a
// fraction of what replaying every migration does (their ALTERs and table
// rebuilds each parse the whole schema again). TestSchemaIsMigrated holds
// the two equal: a new migration changes schema, and its image, too.
const schema = `
CREATE TABLE sessions (
	id         TEXT    NOT NULL PRIMARY KEY,
	agent      TEXT    NOT NULL,
	ephemeral  INTEGER NOT NULL DEFAULT 0,
	next_seq   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	allowlist  TEXT,
	owner      TEXT    NOT NULL DEFAULT '',
	channel    TEXT    NOT NULL DEFAULT '',
	history_version INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX sessions_owner ON sessions (owner, created_at) WHERE ephemeral = 0;

CREATE TABLE messages (
	session_id TEXT    NOT NULL REFERENCES sessions(id),
	key        TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (session_id, key)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER sessions_history_version AFTER INSERT ON sessions
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = NEW.id;
END;
CREATE TRIGGER messages_inserted AFTER INSERT ON messages
WHEN EXISTS (SELECT 1 FROM messages WHERE session_id = NEW.session_id AND key > NEW.key)
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = NEW.session_id;
END;
CREATE TRIGGER messages_updated AFTER UPDATE ON messages
BEGIN
	UPDATE sessions SET history_version = random() WHERE id IN (OLD.session_id, NEW.session_id);
END;
CREATE TRIGGER messages_deleted AFTER DELETE ON messages
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = OLD.session_id;
END;

CREATE TABLE runs (
	id         TEXT    NOT NULL PRIMARY KEY,
	session_id TEXT    NOT NULL REFERENCES sessions(id),
	seq        INTEGER NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
	state      BLOB,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	calls      TEXT,
	options    BLOB,
	started    TEXT,
	UNIQUE (session_id, seq)
) STRICT;
CREATE INDEX runs_unfinished ON runs (session_id, seq)
	WHERE status IN ('queued', 'running');

CREATE TABLE api_keys (
	id              TEXT    NOT NULL PRIMARY KEY,
	name            TEXT    NOT NULL,
	hash            TEXT    NOT NULL UNIQUE,
	prefix          TEXT    NOT NULL,
	agents          TEXT,
	autonomy        TEXT    NOT NULL,
	rate_per_minute INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	revoked_at      INTEGER,
	admin           INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE approvals (
	id          TEXT    NOT NULL PRIMARY KEY,
	session_id  TEXT    NOT NULL REFERENCES sessions(id),
	run_id      TEXT    NOT NULL,
	calls       TEXT    NOT NULL,
	tools       TEXT    NOT NULL,
	prompt      TEXT    NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
	decision    TEXT    NOT NULL DEFAULT '',
	token       TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	resolved_at INTEGER,
	kind        TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX approvals_session ON approvals (session_id, status, created_at, id);

CREATE VIRTUAL TABLE memory_fts USING fts5(
	body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE memory_state (
	id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	generation INTEGER NOT NULL
) STRICT;
INSERT INTO memory_state (id, generation) VALUES (1, 1);
CREATE TABLE memory_spaces (
	id    INTEGER NOT NULL PRIMARY KEY,
	agent TEXT    NOT NULL,
	owner TEXT    NOT NULL,
	UNIQUE (agent, owner)
) STRICT;
CREATE TABLE memories (
	id         INTEGER NOT NULL PRIMARY KEY,
	agent      TEXT    NOT NULL,
	owner      TEXT    NOT NULL DEFAULT '',
	key        TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	category   TEXT    NOT NULL,
	source     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (agent, owner, key)
) STRICT;
CREATE TABLE memory_chunks (
	id        INTEGER NOT NULL PRIMARY KEY,
	memory_id INTEGER NOT NULL REFERENCES memories(id),
	seq       INTEGER NOT NULL,
	text      TEXT    NOT NULL,
	vector    BLOB,
	UNIQUE (memory_id, seq)
) STRICT;

CREATE TABLE channel_state (
	channel TEXT NOT NULL,
	key     TEXT NOT NULL,
	value   TEXT NOT NULL,
	PRIMARY KEY (channel, key)
) STRICT;
CREATE TABLE channel_seen (
	channel TEXT    NOT NULL,
	id      TEXT    NOT NULL,
	seen_at INTEGER NOT NULL,
	PRIMARY KEY (channel, id)
) STRICT;
CREATE INDEX channel_seen_at ON channel_seen (channel, seen_at);
CREATE TABLE channel_users (
	channel   TEXT    NOT NULL,
	user_id   TEXT    NOT NULL,
	code_hash TEXT    NOT NULL,
	added_at  INTEGER NOT NULL,
	PRIMARY KEY (channel, user_id),
	UNIQUE (channel, code_hash)
) STRICT;
CREATE TABLE channel_outbox (
	n          INTEGER NOT NULL PRIMARY KEY,
	channel    TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	recipient  TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	buttons    TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
	attempts   INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER NOT NULL,
	message_id TEXT    NOT NULL DEFAULT '',
	last_error TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	sent_at    INTEGER,
	claim      TEXT    NOT NULL DEFAULT '',
	claimed_until INTEGER NOT NULL DEFAULT 0,
	UNIQUE (channel, id)
) STRICT;
CREATE INDEX channel_outbox_pending ON channel_outbox (channel, n) WHERE status = 'pending';
CREATE TABLE channel_code_tries (
	channel      TEXT    NOT NULL,
	from_id      TEXT    NOT NULL,
	tries        INTEGER NOT NULL,
	lockouts     INTEGER NOT NULL,
	locked_until INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (channel, from_id)
) STRICT;

CREATE TABLE jobs (
	kind       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	payload    BLOB    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (kind, id)
) STRICT;
CREATE INDEX jobs_age ON jobs (kind, created_at, id);

CREATE TABLE responses (
	id          TEXT    NOT NULL PRIMARY KEY,
	owner       TEXT    NOT NULL,
	agent       TEXT    NOT NULL,
	session_id  TEXT    NOT NULL REFERENCES sessions(id),
	run_id      TEXT    NOT NULL,
	seq         INTEGER NOT NULL,
	previous_id TEXT    NOT NULL DEFAULT '',
	request     BLOB,
	created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX responses_session ON responses (session_id);

CREATE TABLE cron_jobs (
	id         TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	definition BLOB    NOT NULL,
	paused     INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX cron_jobs_due ON cron_jobs (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
CREATE INDEX cron_jobs_owner ON cron_jobs (owner, created_at);
CREATE TABLE cron_runs (
	job_id      TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	manual      INTEGER NOT NULL DEFAULT 0,
	status      TEXT    NOT NULL,
	reason      TEXT    NOT NULL DEFAULT '',
	claimed_at  INTEGER NOT NULL,
	lease_until INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0,
	tokens      INTEGER NOT NULL DEFAULT 0,
	reply       TEXT    NOT NULL DEFAULT '',
	delivered   TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (job_id, at)
) STRICT;
CREATE INDEX cron_runs_running ON cron_runs (at) WHERE status = 'running';
`

// migrations[i] brings the schema from user_version i to i+1. Append new
// migrations, and make schema their result; never edit one that has
// shipped.
var migrations = []string{
	// 1: sessions, history, runs and API keys.
	`
CREATE TABLE sessions (
	id         TEXT    NOT NULL PRIMARY KEY,
	agent      TEXT    NOT NULL,
	ephemeral  INTEGER NOT NULL DEFAULT 0,
	next_seq   INTEGER NOT NULL DEFAULT 1,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE messages (
	session_id TEXT    NOT NULL REFERENCES sessions(id),
	key        TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (session_id, key)
) STRICT, WITHOUT ROWID;

CREATE TABLE runs (
	id         TEXT    NOT NULL PRIMARY KEY,
	session_id TEXT    NOT NULL REFERENCES sessions(id),
	seq        INTEGER NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
	state      BLOB,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (session_id, seq)
) STRICT;

-- Only unfinished runs: serves NextRun and UnfinishedSessions and stays
-- small however long the history of finished runs grows.
CREATE INDEX runs_unfinished ON runs (session_id, seq)
	WHERE status IN ('queued', 'running');

-- A run that is stepped is activity on its session.
CREATE TRIGGER runs_touch_session AFTER UPDATE OF status, state ON runs
BEGIN
	UPDATE sessions SET updated_at = NEW.updated_at WHERE id = NEW.session_id;
END;

CREATE TABLE api_keys (
	id              TEXT    NOT NULL PRIMARY KEY,
	name            TEXT    NOT NULL,
	hash            TEXT    NOT NULL UNIQUE,
	prefix          TEXT    NOT NULL,
	agents          TEXT,
	autonomy        TEXT    NOT NULL,
	rate_per_minute INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	revoked_at      INTEGER
) STRICT;
`,
	// 2: session allowlists and approval requests.
	`
-- A JSON array of tool names; NULL is an empty allowlist.
ALTER TABLE sessions ADD COLUMN allowlist TEXT;

CREATE TABLE approvals (
	id          TEXT    NOT NULL PRIMARY KEY,
	session_id  TEXT    NOT NULL REFERENCES sessions(id),
	run_id      TEXT    NOT NULL,
	calls       TEXT    NOT NULL,
	tools       TEXT    NOT NULL,
	prompt      TEXT    NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
	decision    TEXT    NOT NULL DEFAULT '',
	token       TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	resolved_at INTEGER
) STRICT;

-- Serves PendingApproval (session and status, in order) and, by its
-- prefix, DeleteSession and the foreign key check on deleting a session.
CREATE INDEX approvals_session ON approvals (session_id, status, created_at, id);
`,
	// 3: agent memories, their chunks and the full-text index.
	`
-- Agents get numbers so that each one's chunks have ids in a range of
-- their own: id = agent << 36 | n. A search scopes the full-text index
-- to the agent with a rowid range, which FTS5 seeks to.
CREATE TABLE memory_agents (
	id   INTEGER NOT NULL PRIMARY KEY,
	name TEXT    NOT NULL UNIQUE
) STRICT;

CREATE TABLE memories (
	id         INTEGER NOT NULL PRIMARY KEY,
	agent      TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	category   TEXT    NOT NULL,
	source     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (agent, key)
) STRICT;

-- One row per chunk; vector is little-endian float32, NULL without one.
-- A chunk's id is its rowid in memory_fts.
CREATE TABLE memory_chunks (
	id        INTEGER NOT NULL PRIMARY KEY,
	memory_id INTEGER NOT NULL REFERENCES memories(id),
	seq       INTEGER NOT NULL,
	text      TEXT    NOT NULL,
	vector    BLOB,
	UNIQUE (memory_id, seq)
) STRICT;

-- BM25 over chunk text. Contentless: the text lives in memory_chunks.
CREATE VIRTUAL TABLE memory_fts USING fts5(
	body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

-- Bumped by every memory write, so a process notices writes by another
-- and drops its in-memory copy of the vectors.
CREATE TABLE memory_state (
	id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	generation INTEGER NOT NULL
) STRICT;
INSERT INTO memory_state (id, generation) VALUES (1, 0);
`,
	// 4: the Telegram channel's state, handled updates, users let in by
	// access codes, and the reply outbox.
	`
CREATE TABLE telegram_state (
	key   TEXT NOT NULL PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;

CREATE TABLE telegram_seen (
	update_id INTEGER NOT NULL PRIMARY KEY,
	seen_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX telegram_seen_at ON telegram_seen (seen_at);

CREATE TABLE telegram_users (
	user_id   INTEGER NOT NULL PRIMARY KEY,
	code_hash TEXT    NOT NULL UNIQUE,
	added_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE telegram_outbox (
	n          INTEGER NOT NULL PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	chat_id    INTEGER NOT NULL,
	text       TEXT    NOT NULL,
	status     TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
	attempts   INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER NOT NULL,
	message_id INTEGER,
	last_error TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	sent_at    INTEGER
) STRICT;
CREATE INDEX telegram_outbox_pending ON telegram_outbox (n) WHERE status = 'pending';
`,
	// 5: session owners, the raw arguments of a run's pending tool calls,
	// and the durable job queue. A session's updated_at is when a run was
	// last queued: stepping a run no longer writes the session too.
	`
ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
DROP TRIGGER runs_touch_session;

-- A JSON array of the calls the run is about to execute, arguments as the
-- model sent them; NULL when none are pending.
ALTER TABLE runs ADD COLUMN calls TEXT;

CREATE TABLE jobs (
	kind       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	payload    BLOB    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (kind, id)
) STRICT;
CREATE INDEX jobs_age ON jobs (kind, created_at, id);
`,
	// 6: memories belong to an owner ('' for agent-wide ones, which all
	// existing memories become, but for remembered conversations, which
	// are forgotten). Memory spaces, one per agent and owner,
	// take over the chunk id ranges of agents, so that a search reads only
	// the agent-wide space and the owner's. An agent's number becomes that
	// of its agent-wide space: existing chunks and full-text rows keep
	// their ids. The tables are rebuilt for the new unique keys, the
	// chunks into a table that references the new memories (SQLite
	// renames the reference with the table), so foreign keys stay on.
	`
CREATE TABLE memory_spaces (
	id    INTEGER NOT NULL PRIMARY KEY,
	agent TEXT    NOT NULL,
	owner TEXT    NOT NULL,
	UNIQUE (agent, owner)
) STRICT;
INSERT INTO memory_spaces (id, agent, owner) SELECT id, name, '' FROM memory_agents;
DROP TABLE memory_agents;

CREATE TABLE memories_v5 (
	id         INTEGER NOT NULL PRIMARY KEY,
	agent      TEXT    NOT NULL,
	owner      TEXT    NOT NULL DEFAULT '',
	key        TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	category   TEXT    NOT NULL,
	source     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (agent, owner, key)
) STRICT;
INSERT INTO memories_v5 (id, agent, owner, key, text, category, source, created_at, updated_at)
	SELECT id, agent, '', key, text, category, source, created_at, updated_at FROM memories;

CREATE TABLE memory_chunks_v5 (
	id        INTEGER NOT NULL PRIMARY KEY,
	memory_id INTEGER NOT NULL REFERENCES memories_v5(id),
	seq       INTEGER NOT NULL,
	text      TEXT    NOT NULL,
	vector    BLOB,
	UNIQUE (memory_id, seq)
) STRICT;
INSERT INTO memory_chunks_v5 (id, memory_id, seq, text, vector)
	SELECT id, memory_id, seq, text, vector FROM memory_chunks;

DROP TABLE memory_chunks;
DROP TABLE memories;
ALTER TABLE memories_v5 RENAME TO memories;
ALTER TABLE memory_chunks_v5 RENAME TO memory_chunks;

-- Remembered conversations are private to their owner, which was not
-- recorded before: rather than share them with every user of the agent,
-- they are forgotten. Sessions keep their history.
DELETE FROM memory_fts WHERE rowid IN (SELECT c.id FROM memory_chunks c JOIN memories m ON m.id = c.memory_id
	WHERE m.category = 'conversation');
DELETE FROM memory_chunks WHERE memory_id IN (SELECT id FROM memories WHERE category = 'conversation');
DELETE FROM memories WHERE category = 'conversation';
UPDATE memory_state SET generation = generation + 1;
`,
	// 7: what an API client asked of a run beyond its input (its own
	// tools, the call parameters), and the kind of what a parked run waits
	// for ('' a person's approval, 'client_tools' a client's tool results).
	`
ALTER TABLE runs ADD COLUMN options BLOB;
ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT '';
`,
	// 8: stored responses of the Responses API, each a pointer to the run
	// that answered it; DeleteSession deletes them with their session.
	`
CREATE TABLE responses (
	id          TEXT    NOT NULL PRIMARY KEY,
	owner       TEXT    NOT NULL,
	agent       TEXT    NOT NULL,
	session_id  TEXT    NOT NULL REFERENCES sessions(id),
	run_id      TEXT    NOT NULL,
	seq         INTEGER NOT NULL,
	previous_id TEXT    NOT NULL DEFAULT '',
	request     BLOB,
	created_at  INTEGER NOT NULL
) STRICT;

-- Serves DeleteSession and the foreign key check on deleting a session.
CREATE INDEX responses_session ON responses (session_id);
`,
	// 9: scheduled check-ins (package schedule): jobs with their next
	// firing, and one row per claimed firing, keyed by job and scheduled
	// time, so that a firing is claimed once.
	`
CREATE TABLE cron_jobs (
	id         TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	definition BLOB    NOT NULL,
	paused     INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX cron_jobs_due ON cron_jobs (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
CREATE INDEX cron_jobs_owner ON cron_jobs (owner, created_at);

CREATE TABLE cron_runs (
	job_id      TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	manual      INTEGER NOT NULL DEFAULT 0,
	status      TEXT    NOT NULL,
	reason      TEXT    NOT NULL DEFAULT '',
	claimed_at  INTEGER NOT NULL,
	lease_until INTEGER NOT NULL DEFAULT 0,
	finished_at INTEGER NOT NULL DEFAULT 0,
	tokens      INTEGER NOT NULL DEFAULT 0,
	reply       TEXT    NOT NULL DEFAULT '',
	delivered   TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (job_id, at)
) STRICT;
CREATE INDEX cron_runs_running ON cron_runs (at) WHERE status = 'running';
`,
	// 10: admin keys (the web console's key management), and the index
	// that lists an owner's sessions (store.OwnerSessions).
	`
ALTER TABLE api_keys ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_owner ON sessions (owner, created_at) WHERE ephemeral = 0;
`,
	// 11: the Telegram chats' tries of access codes (store.CodeTries),
	// locked_until 0 when no lockout began.
	`
CREATE TABLE telegram_code_tries (
	chat_id      INTEGER NOT NULL PRIMARY KEY,
	tries        INTEGER NOT NULL,
	lockouts     INTEGER NOT NULL,
	locked_until INTEGER NOT NULL,
	version      INTEGER NOT NULL
) STRICT;
`,
	// 12: the pending calls that started (store.Runs.StartCall), a JSON
	// array of call ids; NULL when none did. Replacing or clearing the
	// pending calls clears it.
	`
ALTER TABLE runs ADD COLUMN started TEXT;
`,
	// 13: the channel a session was started on (store.Session.Channel).
	`
ALTER TABLE sessions ADD COLUMN channel TEXT NOT NULL DEFAULT '';
`,
	// 14: the version of each session's history, which every write of its
	// messages but an append (a key after all the session's keys)
	// changes, whichever connection or process makes it: a process keeps
	// the history it read and reads only what was appended while the
	// version stays the same (DB.Messages). A random 64-bit value, so
	// that a session deleted and created again does not repeat one.
	`
ALTER TABLE sessions ADD COLUMN history_version INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER sessions_history_version AFTER INSERT ON sessions
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = NEW.id;
END;
CREATE TRIGGER messages_inserted AFTER INSERT ON messages
WHEN EXISTS (SELECT 1 FROM messages WHERE session_id = NEW.session_id AND key > NEW.key)
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = NEW.session_id;
END;
CREATE TRIGGER messages_updated AFTER UPDATE ON messages
BEGIN
	UPDATE sessions SET history_version = random() WHERE id IN (OLD.session_id, NEW.session_id);
END;
CREATE TRIGGER messages_deleted AFTER DELETE ON messages
BEGIN
	UPDATE sessions SET history_version = random() WHERE id = OLD.session_id;
END;
`,
	// 15: the claim of a Telegram outbox message by the sender sending it
	// (store.Channel.ClaimOutbox): its id, and when it lapses (0: none).
	`
ALTER TABLE telegram_outbox ADD COLUMN claim TEXT NOT NULL DEFAULT '';
ALTER TABLE telegram_outbox ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
`,
	// 16: the Telegram channel's state becomes that of any messaging
	// channel (store.Channel): every table keyed by the channel's name,
	// ids as text; Telegram's rows move over as channel 'tg'.
	`
CREATE TABLE channel_state (
	channel TEXT NOT NULL,
	key     TEXT NOT NULL,
	value   TEXT NOT NULL,
	PRIMARY KEY (channel, key)
) STRICT;
CREATE TABLE channel_seen (
	channel TEXT    NOT NULL,
	id      TEXT    NOT NULL,
	seen_at INTEGER NOT NULL,
	PRIMARY KEY (channel, id)
) STRICT;
CREATE INDEX channel_seen_at ON channel_seen (channel, seen_at);
CREATE TABLE channel_users (
	channel   TEXT    NOT NULL,
	user_id   TEXT    NOT NULL,
	code_hash TEXT    NOT NULL,
	added_at  INTEGER NOT NULL,
	PRIMARY KEY (channel, user_id),
	UNIQUE (channel, code_hash)
) STRICT;
CREATE TABLE channel_outbox (
	n          INTEGER NOT NULL PRIMARY KEY,
	channel    TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	recipient  TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	buttons    TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
	attempts   INTEGER NOT NULL DEFAULT 0,
	next_at    INTEGER NOT NULL,
	message_id TEXT    NOT NULL DEFAULT '',
	last_error TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	sent_at    INTEGER,
	claim      TEXT    NOT NULL DEFAULT '',
	claimed_until INTEGER NOT NULL DEFAULT 0,
	UNIQUE (channel, id)
) STRICT;
CREATE INDEX channel_outbox_pending ON channel_outbox (channel, n) WHERE status = 'pending';
CREATE TABLE channel_code_tries (
	channel      TEXT    NOT NULL,
	from_id      TEXT    NOT NULL,
	tries        INTEGER NOT NULL,
	lockouts     INTEGER NOT NULL,
	locked_until INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (channel, from_id)
) STRICT;
INSERT INTO channel_state (channel, key, value) SELECT 'tg', key, value FROM telegram_state;
INSERT INTO channel_seen (channel, id, seen_at) SELECT 'tg', CAST(update_id AS TEXT), seen_at FROM telegram_seen;
INSERT INTO channel_users (channel, user_id, code_hash, added_at)
	SELECT 'tg', CAST(user_id AS TEXT), code_hash, added_at FROM telegram_users;
INSERT INTO channel_outbox (n, channel, id, recipient, text, status, attempts, next_at, message_id, last_error, created_at,
		sent_at, claim, claimed_until)
	SELECT n, 'tg', id, CAST(chat_id AS TEXT), text, status, attempts, next_at, coalesce(CAST(message_id AS TEXT), ''),
		last_error, created_at, sent_at, claim, claimed_until FROM telegram_outbox;
INSERT INTO channel_code_tries (channel, from_id, tries, lockouts, locked_until, version)
	SELECT 'tg', CAST(chat_id AS TEXT), tries, lockouts, locked_until, version FROM telegram_code_tries;
DROP TABLE telegram_state;
DROP TABLE telegram_seen;
DROP TABLE telegram_users;
DROP TABLE telegram_outbox;
DROP TABLE telegram_code_tries;
`,
}

// migrate brings the database to the latest version in one immediate
// transaction, so concurrent openers apply each migration once: a new
// database (no version, no tables) from schema, an older one through the
// migrations it has not seen.
func migrate(ctx context.Context, w *sql.DB) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()

	var version, objects int
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)").Scan(&version, &objects); err != nil {
		return fmt.Errorf("migrate: read user_version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("migrate: schema version %d is newer than this binary knows (%d)", version, len(migrations))
	}
	if version == len(migrations) {
		return nil
	}
	if version == 0 && objects == 0 {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("migrate: create version %d: %w", len(migrations), err)
		}
	} else {
		for v := version; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate: to version %d: %w", v+1, err)
			}
		}
	}
	// PRAGMA takes no parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("migrate: set user_version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
