package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// Schedule is the local schedule.Engine: jobs and their timers in the
// cron_jobs table (each job's next firing, indexed), and the record of
// every claimed firing in cron_runs, keyed by job and scheduled time, so
// a firing is claimed once. Writes are immediate transactions on the
// file: the CLI and the server may share it.
type Schedule struct {
	db  *DB
	now func() time.Time
	// Lease is how long a claim holds a firing before another claim may
	// take its run over.
	Lease time.Duration
}

// MinEvery is the shortest interval of the local engine.
const MinEvery = time.Second

var _ schedule.Timers = (*Schedule)(nil)

// Schedule returns the engine on the database; now is its clock
// (time.Now when nil).
func (db *DB) Schedule(now func() time.Time) *Schedule {
	if now == nil {
		now = time.Now
	}
	return &Schedule{db: db, now: now, Lease: time.Minute}
}

func (s *Schedule) clock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

const cronJobColumns = `id, owner, definition, paused, next_at, created_at, updated_at`

// scanJob reads the cronJobColumns of one row.
func scanJob(sc scanner) (schedule.Job, error) {
	var j schedule.Job
	var def []byte
	var paused int
	var next sql.NullInt64
	var created, updated int64
	var id, owner string
	if err := sc.Scan(&id, &owner, &def, &paused, &next, &created, &updated); err != nil {
		return schedule.Job{}, err
	}
	if err := json.Unmarshal(def, &j); err != nil {
		return schedule.Job{}, fmt.Errorf("decode job %s: %w", id, err)
	}
	j.ID, j.Owner, j.Paused = id, owner, paused != 0
	j.CreatedAt, j.UpdatedAt = fromMillis(created), fromMillis(updated)
	j.Next = time.Time{}
	if next.Valid {
		j.Next = fromMillis(next.Int64)
	}
	return j, nil
}

// definition is what the definition column holds: the job without the
// columns of its own.
func definition(j schedule.Job) ([]byte, error) {
	j.ID, j.Owner, j.Paused = "", "", false
	j.CreatedAt, j.UpdatedAt, j.Next = time.Time{}, time.Time{}, time.Time{}
	return json.Marshal(j)
}

func nextAt(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: toMillis(t), Valid: true}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// write runs f in an immediate transaction and commits it.
func (s *Schedule) write(ctx context.Context, what string, f func(tx *sql.Tx) error) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return nil
}

// jobIn reads a job in tx; owner "" matches any owner.
func jobIn(ctx context.Context, tx *sql.Tx, owner, id string) (schedule.Job, error) {
	j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+cronJobColumns+` FROM cron_jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != "" && j.Owner != owner) {
		return schedule.Job{}, fmt.Errorf("job %q: %w", id, schedule.ErrNotFound)
	}
	return j, err
}

func saveJob(ctx context.Context, tx *sql.Tx, j schedule.Job) error {
	def, err := definition(j)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE cron_jobs SET definition = ?, paused = ?, next_at = ?, updated_at = ? WHERE id = ?`,
		def, boolInt(j.Paused), nextAt(j.Next), toMillis(j.UpdatedAt), j.ID)
	return err
}

// Create implements schedule.Engine.
func (s *Schedule) Create(ctx context.Context, j schedule.Job) (schedule.Job, error) {
	j, err := schedule.Prepare(j, s.clock(), MinEvery, newJobID)
	if err != nil {
		return schedule.Job{}, err
	}
	def, err := definition(j)
	if err != nil {
		return schedule.Job{}, fmt.Errorf("sqlite: create job: %w", err)
	}
	err = s.write(ctx, "create job", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO cron_jobs (`+cronJobColumns+`) VALUES (?, ?, ?, 0, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			j.ID, j.Owner, def, nextAt(j.Next), toMillis(j.CreatedAt), toMillis(j.UpdatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, fmt.Errorf("job id %q is taken", j.ID))
		}
		return nil
	})
	if err != nil {
		return schedule.Job{}, err
	}
	return j, nil
}

// cmpErr returns err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// Update implements schedule.Engine.
func (s *Schedule) Update(ctx context.Context, j schedule.Job) (schedule.Job, error) {
	now := s.clock()
	var out schedule.Job
	err := s.write(ctx, "update job", func(tx *sql.Tx) error {
		old, err := jobIn(ctx, tx, j.Owner, j.ID)
		if err != nil {
			return err
		}
		j.Schedule.Anchor = time.Time{}
		if err := j.Validate(now, MinEvery); err != nil {
			return err
		}
		j.Paused, j.CreatedAt, j.UpdatedAt = old.Paused, old.CreatedAt, now
		out = schedule.Reschedule(j, now)
		return saveJob(ctx, tx, out)
	})
	return out, err
}

// Delete implements schedule.Engine.
func (s *Schedule) Delete(ctx context.Context, owner, id string) error {
	return s.write(ctx, "delete job", func(tx *sql.Tx) error {
		if _, err := jobIn(ctx, tx, owner, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM cron_runs WHERE job_id = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM cron_jobs WHERE id = ?`, id)
		return err
	})
}

// SetPaused implements schedule.Engine.
func (s *Schedule) SetPaused(ctx context.Context, owner, id string, paused bool) (schedule.Job, error) {
	now := s.clock()
	var out schedule.Job
	err := s.write(ctx, "pause job", func(tx *sql.Tx) error {
		j, err := jobIn(ctx, tx, owner, id)
		if err != nil {
			return err
		}
		if j.Paused == paused {
			out = j
			return nil
		}
		j.Paused, j.UpdatedAt = paused, now
		if !paused && !j.Next.IsZero() {
			j = schedule.Reschedule(j, now)
		}
		out = j
		return saveJob(ctx, tx, j)
	})
	return out, err
}

// Get implements schedule.Engine.
func (s *Schedule) Get(ctx context.Context, owner, id string) (schedule.Job, error) {
	j, err := s.Job(ctx, id)
	if err == nil && j.Owner != owner {
		return schedule.Job{}, fmt.Errorf("sqlite: job %q: %w", id, schedule.ErrNotFound)
	}
	return j, err
}

// List implements schedule.Engine.
func (s *Schedule) List(ctx context.Context, owner string) ([]schedule.Job, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+cronJobColumns+` FROM cron_jobs WHERE owner = ? ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list jobs: %w", err)
	}
	defer rows.Close()
	var out []schedule.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list jobs: %w", err)
	}
	return out, nil
}

// Page implements schedule.Engine on the index cron_jobs_owner.
func (s *Schedule) Page(ctx context.Context, owner, cursor string, limit int) ([]schedule.Job, string, error) {
	if err := schedule.CheckLimit(limit); err != nil {
		return nil, "", err
	}
	created, id, err := schedule.ParseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	q := `SELECT ` + cronJobColumns + ` FROM cron_jobs WHERE owner = ? ORDER BY created_at, id LIMIT ?`
	args := []any{owner, limit + 1}
	if cursor != "" {
		ms := toMillis(created)
		q = `SELECT ` + cronJobColumns + ` FROM cron_jobs WHERE owner = ? AND (created_at > ? OR (created_at = ? AND id > ?))
			ORDER BY created_at, id LIMIT ?`
		args = []any{owner, ms, ms, id, limit + 1}
	}
	rows, err := s.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: page of jobs: %w", err)
	}
	defer rows.Close()
	var out []schedule.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: page of jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("sqlite: page of jobs: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	return out[:limit], schedule.CursorAfter(out[limit-1]), nil
}

const cronRunColumns = `job_id, at, manual, status, reason, claimed_at, lease_until, finished_at, tokens, reply, delivered`

func scanCronRun(sc scanner) (schedule.Run, error) {
	var r schedule.Run
	var at, claimed, lease, finished int64
	var manual int
	var status string
	if err := sc.Scan(&r.JobID, &at, &manual, &status, &r.Reason, &claimed, &lease, &finished, &r.Tokens, &r.Reply, &r.Delivered); err != nil {
		return schedule.Run{}, err
	}
	r.At, r.ClaimedAt, r.Manual, r.Status = fromMillis(at), fromMillis(claimed), manual != 0, schedule.RunStatus(status)
	if lease != 0 {
		r.LeaseUntil = fromMillis(lease)
	}
	if finished != 0 {
		r.FinishedAt = fromMillis(finished)
	}
	return r, nil
}

func (s *Schedule) queryRuns(ctx context.Context, what, query string, args ...any) ([]schedule.Run, error) {
	rows, err := s.db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	defer rows.Close()
	var out []schedule.Run
	for rows.Next() {
		r, err := scanCronRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", what, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return out, nil
}

// Runs implements schedule.Engine.
func (s *Schedule) Runs(ctx context.Context, owner, id string, limit int) ([]schedule.Run, error) {
	if _, err := s.Get(ctx, owner, id); err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, "runs of job", `SELECT `+cronRunColumns+` FROM cron_runs WHERE job_id = ? ORDER BY at DESC LIMIT ?`, id, max(limit, 0))
}

// Claim implements schedule.Engine.
func (s *Schedule) Claim(ctx context.Context, f schedule.Firing) (schedule.Run, error) {
	return s.claim(ctx, "", f, false)
}

// Trigger implements schedule.Engine.
func (s *Schedule) Trigger(ctx context.Context, owner, id string) (schedule.Run, error) {
	return s.claim(ctx, owner, schedule.Firing{JobID: id, At: s.clock()}, true)
}

// claim claims the firing f; a manual one of owner's job.
func (s *Schedule) claim(ctx context.Context, owner string, f schedule.Firing, manual bool) (schedule.Run, error) {
	now := s.clock()
	f.At = f.At.UTC().Truncate(time.Millisecond)
	var out schedule.Run
	err := s.write(ctx, "claim "+f.String(), func(tx *sql.Tx) error {
		j, err := jobIn(ctx, tx, owner, f.JobID)
		if err != nil {
			return err
		}
		old, err := scanCronRun(tx.QueryRowContext(ctx, `SELECT `+cronRunColumns+` FROM cron_runs WHERE job_id = ? AND at = ?`, f.JobID, toMillis(f.At)))
		switch {
		case err == nil:
			old.Job = j
			return s.takeOver(ctx, tx, old, now, &out)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if !manual && (j.Paused || j.Next.IsZero() || f.At.Before(j.Next) || f.At.After(now)) {
			return fmt.Errorf("job %s at %s: %w", f.JobID, f.At.Format(time.RFC3339Nano), schedule.ErrNotDue)
		}
		start, end := j.Schedule.Day(f.At)
		var today int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cron_runs WHERE job_id = ? AND at >= ? AND at < ? AND status != 'skipped'`,
			f.JobID, toMillis(start), toMillis(end)).Scan(&today); err != nil {
			return err
		}
		d := schedule.Decide(j, f.At, now, today, manual)
		out = schedule.Run{Firing: f, Manual: manual, Status: d.Status, Reason: d.Reason, ClaimedAt: now, Job: j}
		if d.Status == schedule.RunRunning {
			out.LeaseUntil = now.Add(s.Lease)
		} else {
			out.FinishedAt = now
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO cron_runs (`+cronRunColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, '', '')`,
			f.JobID, toMillis(f.At), boolInt(manual), string(out.Status), out.Reason, toMillis(now), zeroMillis(out.LeaseUntil), zeroMillis(out.FinishedAt)); err != nil {
			return err
		}
		if err := pruneRuns(ctx, tx, f.JobID, now); err != nil {
			return err
		}
		if manual {
			return nil
		}
		j.Next = d.Next
		return saveJob(ctx, tx, j)
	})
	return out, err
}

// What pruneRuns keeps of a job's finished runs: the latest keepRuns, and
// all of the last keepRunsFor, which the daily limit counts (a day of a
// time zone lies within two UTC days).
const (
	keepRuns    = 100
	keepRunsFor = 48 * time.Hour
)

// pruneRuns deletes the job's finished runs that are neither among its
// latest keepRuns nor younger than keepRunsFor, so that a job firing every
// second keeps a bounded record. A pruned firing is never claimed again:
// it is before the job's next firing.
func pruneRuns(ctx context.Context, tx *sql.Tx, jobID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM cron_runs WHERE job_id = ? AND status != 'running' AND at < ?
		AND at < (SELECT at FROM cron_runs WHERE job_id = ? ORDER BY at DESC LIMIT 1 OFFSET ?)`,
		jobID, toMillis(now.Add(-keepRunsFor)), jobID, keepRuns-1)
	if err != nil {
		return fmt.Errorf("prune runs: %w", err)
	}
	return nil
}

// takeOver is a claim of a firing that has a run: refused while the run
// holds its lease or when it has finished; after the lease the claim
// takes the run over.
func (s *Schedule) takeOver(ctx context.Context, tx *sql.Tx, old schedule.Run, now time.Time, out *schedule.Run) error {
	switch {
	case old.Status != schedule.RunRunning:
		return fmt.Errorf("job %s at %s (%s): %w", old.JobID, old.At.Format(time.RFC3339Nano), old.Status, schedule.ErrDone)
	case now.Before(old.LeaseUntil):
		return fmt.Errorf("job %s at %s: %w", old.JobID, old.At.Format(time.RFC3339Nano), schedule.ErrClaimed)
	}
	old.LeaseUntil, old.Resumed = now.Add(s.Lease), true
	*out = old
	_, err := tx.ExecContext(ctx, `UPDATE cron_runs SET lease_until = ? WHERE job_id = ? AND at = ?`, toMillis(old.LeaseUntil), old.JobID, toMillis(old.At))
	return err
}

// zeroMillis stores the zero time as 0.
func zeroMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return toMillis(t)
}

// Finish implements schedule.Engine.
func (s *Schedule) Finish(ctx context.Context, f schedule.Firing, r schedule.Result) error {
	now := s.clock()
	reply := truncateUTF8(r.Reply, schedule.MaxReply)
	return s.write(ctx, "finish "+f.String(), func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE cron_runs SET status = ?, reason = ?, tokens = ?, reply = ?, delivered = ?, finished_at = ?, lease_until = 0
			WHERE job_id = ? AND at = ? AND status = 'running'`,
			string(r.Status), r.Reason, r.Tokens, reply, r.Delivered, toMillis(now), f.JobID, toMillis(f.At.UTC()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM cron_runs WHERE job_id = ? AND at = ?`, f.JobID, toMillis(f.At.UTC())).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", f, schedule.ErrNotFound)
		}
		return err // finished already: nothing to change
	})
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Due implements schedule.Timers.
func (s *Schedule) Due(ctx context.Context, limit int) ([]schedule.Firing, error) {
	now := s.clock()
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+cronJobColumns+` FROM cron_jobs WHERE paused = 0 AND next_at IS NOT NULL AND next_at <= ? ORDER BY next_at LIMIT ?`,
		toMillis(now), max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("sqlite: due jobs: %w", err)
	}
	defer rows.Close()
	var out []schedule.Firing
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: due jobs: %w", err)
		}
		latest, _ := j.Schedule.Latest(j.Next, now)
		out = append(out, schedule.Firing{JobID: j.ID, At: latest})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: due jobs: %w", err)
	}
	return out, nil
}

// NextDue implements schedule.Timers.
func (s *Schedule) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := s.db.r.QueryRowContext(ctx, `SELECT min(next_at) FROM cron_jobs WHERE paused = 0 AND next_at IS NOT NULL`).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: next due job: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return fromMillis(next.Int64), true, nil
}

// Unfinished implements schedule.Timers.
func (s *Schedule) Unfinished(ctx context.Context) ([]schedule.Run, error) {
	runs, err := s.queryRuns(ctx, "unfinished runs", `SELECT `+cronRunColumns+` FROM cron_runs WHERE status = 'running' ORDER BY at`)
	if err != nil {
		return nil, err
	}
	for i := range runs {
		if runs[i].Job, err = s.Job(ctx, runs[i].JobID); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// Job returns the job of that id whoever owns it, for the process that
// runs and records its firings (schedule.Replier.Jobs).
func (s *Schedule) Job(ctx context.Context, id string) (schedule.Job, error) {
	j, err := scanJob(s.db.r.QueryRowContext(ctx, `SELECT `+cronJobColumns+` FROM cron_jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = schedule.ErrNotFound
	}
	if err != nil {
		return schedule.Job{}, fmt.Errorf("sqlite: job %q: %w", id, err)
	}
	return j, nil
}

// newJobID returns a short random job id.
func newJobID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return "job_" + hex.EncodeToString(b[:])
}
