package sqlite

import "database/sql"

// Column lists shared by the queries that scan whole records.
const (
	runColumns      = `id, session_id, seq, status, state, options, created_at, updated_at`
	keyColumns      = `id, name, hash, prefix, agents, autonomy, rate_per_minute, admin, created_at, revoked_at, daily_tokens, monthly_tokens, deny_tools`
	approvalColumns = `id, session_id, run_id, kind, calls, tools, prompt, status, decision, token, created_at, resolved_at`
	responseColumns = `id, owner, agent, session_id, run_id, seq, previous_id, request, created_at`
)

// statements are prepared on first use (stmt): writes on the writer pool,
// reads on the reader pool.
type statements struct {
	// writer
	createSession  stmt
	appendMessage  stmt
	deleteMessages stmt
	runForEnqueue  stmt
	takeSeq        stmt
	insertRun      stmt
	updateRun      stmt
	setCalls       stmt
	newSession     stmt
	putJob         stmt
	deleteJobs     stmt
	deleteSessMsgs stmt
	deleteSessRuns stmt
	deleteSessAppr stmt
	deleteSessResp stmt
	deleteSessPII  stmt
	deleteSession  stmt
	allowTool      stmt
	createApproval stmt
	resolveAppr    stmt
	approvalForRes stmt
	setApprToken   stmt
	createKey      stmt
	revokeKey      stmt
	createResponse stmt
	deleteResponse stmt

	// reader
	getSession  stmt
	getMessage  stmt
	history     stmt
	runMessages stmt
	getRun      stmt
	getCalls    stmt
	getStarted  stmt
	startCall   stmt
	jobs        stmt
	nextRun     stmt
	unfinished  stmt
	getAppr     stmt
	pending     stmt
	keyByHash   stmt
	listKeys    stmt
	getResponse stmt
	sessionsOf  stmt
	chSessions  stmt
	all         []*stmt
}

// define gives each statement its pool and query; none is prepared yet.
func (s *statements) define(w, r *sql.DB) {
	list := []struct {
		db    *sql.DB
		dst   *stmt
		query string
	}{
		{w, &s.createSession, `INSERT INTO sessions (id, agent, owner, channel, ephemeral, allowlist, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.newSession, `INSERT INTO sessions (id, agent, owner, channel, ephemeral, allowlist, next_seq, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 2, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.appendMessage, `INSERT INTO messages (session_id, key, run_id, body, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id, key) DO NOTHING`},
		{w, &s.deleteMessages, `DELETE FROM messages
			WHERE session_id = ? AND key IN (SELECT value FROM json_each(?))`},
		{w, &s.runForEnqueue, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		{w, &s.takeSeq, `UPDATE sessions SET next_seq = next_seq + 1, updated_at = ?
			WHERE id = ? AND owner = ? RETURNING next_seq - 1`},
		{w, &s.insertRun, `INSERT INTO runs (` + runColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.updateRun, `UPDATE runs SET status = ?, state = ?, updated_at = ? WHERE id = ? AND status NOT IN ('done', 'failed')`},
		// New pending calls have not started.
		{w, &s.setCalls, `UPDATE runs SET calls = ?, started = NULL WHERE id = ?`},
		{w, &s.getStarted, `SELECT started, status FROM runs WHERE id = ?`},
		{w, &s.startCall, `UPDATE runs SET started = json_insert(coalesce(started, '[]'), '$[#]', ?) WHERE id = ?`},
		{w, &s.putJob, `INSERT INTO jobs (kind, id, payload, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (kind, id) DO UPDATE SET payload = excluded.payload, created_at = excluded.created_at`},
		{w, &s.deleteJobs, `DELETE FROM jobs WHERE kind = ? AND id IN (SELECT value FROM json_each(?))`},
		{w, &s.deleteSessMsgs, `DELETE FROM messages WHERE session_id = ?`},
		{w, &s.deleteSessRuns, `DELETE FROM runs WHERE session_id = ?`},
		{w, &s.deleteSessAppr, `DELETE FROM approvals WHERE session_id = ?`},
		{w, &s.deleteSessResp, `DELETE FROM responses WHERE session_id = ?`},
		{w, &s.deleteSessPII, `DELETE FROM pii_tokens WHERE session_id = ?`},
		{w, &s.deleteSession, `DELETE FROM sessions WHERE id = ?`},
		// One statement, so concurrent additions cannot lose each other. It
		// matches the session's row whether or not the tool is listed, so
		// no affected row means no session.
		{w, &s.allowTool, `UPDATE sessions SET allowlist = CASE
				WHEN EXISTS (SELECT 1 FROM json_each(allowlist) WHERE value = ?2) THEN allowlist
				ELSE json_insert(coalesce(allowlist, '[]'), '$[#]', ?2)
			END
			WHERE id = ?1`},
		{w, &s.createApproval, `INSERT INTO approvals (` + approvalColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.resolveAppr, `UPDATE approvals SET status = ?, decision = ?, resolved_at = ?
			WHERE id = ? AND status = 'pending' RETURNING ` + approvalColumns},
		{w, &s.approvalForRes, `SELECT ` + approvalColumns + ` FROM approvals WHERE id = ?`},
		{w, &s.setApprToken, `UPDATE approvals SET token = ? WHERE id = ?`},
		{w, &s.createKey, `INSERT INTO api_keys (` + keyColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`},
		{w, &s.revokeKey, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`},
		{w, &s.createResponse, `INSERT INTO responses (` + responseColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.deleteResponse, `DELETE FROM responses WHERE id = ?`},

		{r, &s.getSession, `SELECT agent, owner, channel, ephemeral, allowlist, created_at, updated_at FROM sessions WHERE id = ?`},
		{r, &s.getMessage, `SELECT run_id, body, created_at FROM messages WHERE session_id = ? AND key = ?`},
		{r, &s.runMessages, `SELECT key, run_id, body, created_at FROM messages
			WHERE session_id = ? AND key >= ? AND key < ? ORDER BY key`},
		{r, &s.history, `SELECT s.history_version, m.key, m.run_id, m.body, m.created_at FROM sessions s
			LEFT JOIN messages m ON m.session_id = s.id AND m.key > ? WHERE s.id = ? ORDER BY m.key`},
		{r, &s.getRun, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		{r, &s.getCalls, `SELECT calls FROM runs WHERE id = ?`},
		{r, &s.jobs, `SELECT kind, id, payload, created_at FROM jobs WHERE kind = ? ORDER BY created_at, id LIMIT ?`},
		// The status test must match the runs_unfinished index's WHERE
		// clause for SQLite to use that index.
		{r, &s.nextRun, `SELECT ` + runColumns + ` FROM runs
			WHERE session_id = ? AND status IN ('queued', 'running') ORDER BY seq LIMIT 1`},
		{r, &s.unfinished, `SELECT DISTINCT session_id FROM runs
			WHERE status IN ('queued', 'running') ORDER BY session_id`},
		{r, &s.getAppr, `SELECT ` + approvalColumns + ` FROM approvals WHERE id = ?`},
		{r, &s.pending, `SELECT ` + approvalColumns + ` FROM approvals
			WHERE session_id = ? AND status = 'pending' ORDER BY created_at, id LIMIT 1`},
		{r, &s.keyByHash, `SELECT ` + keyColumns + ` FROM api_keys WHERE hash = ?`},
		{r, &s.listKeys, `SELECT ` + keyColumns + ` FROM api_keys ORDER BY created_at, id`},
		{r, &s.getResponse, `SELECT ` + responseColumns + ` FROM responses WHERE id = ?`},
		// The ephemeral test must match the sessions_owner index's WHERE
		// clause for SQLite to use that index.
		{r, &s.sessionsOf, `SELECT id, agent, owner, channel, ephemeral, allowlist, created_at, updated_at FROM sessions
			WHERE owner = ? AND ephemeral = 0 ORDER BY created_at DESC, id DESC LIMIT ?`},
		// A channel's identities are a range of owners ("slack:" up to
		// "slack;"), which the sessions_owner index holds.
		{r, &s.chSessions, `SELECT id, agent, owner, channel, ephemeral, allowlist, created_at, updated_at FROM sessions
			WHERE owner >= ?1 || ':' AND owner < ?1 || ';' AND channel = ?1 AND ephemeral = 0 ORDER BY created_at DESC, id DESC LIMIT ?2`},
	}
	for _, p := range list {
		p.dst.define(p.db, p.query)
		s.all = append(s.all, p.dst)
	}
}

func (s *statements) close() error { return closeAll(s.all) }
