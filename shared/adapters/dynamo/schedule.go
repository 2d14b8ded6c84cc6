package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// Scheduled check-ins (schedule.Engine) on AWS: the jobs and the record
// of their firings are in the table, in the owner's partition, so that a
// Query of another owner never meets them; the timers are kept elsewhere
// (ScheduleTimers: one EventBridge Scheduler schedule per job), and their
// deliveries are claimed here.
//
//	pk               sk                     what
//	CRON#<owner>     JOB#<id>               a job           def (B, its definition), paused, next_at, created_at, updated_at
//	CRON#<owner>     RUN#<id>#<ms:015>      a firing's run  at, manual, status, reason, claimed_at, lease_until, finished_at, tokens, reply, delivered, expires_at
//	CRONID#<id>      CRONID                 the job id's claim, table-wide   owner
//
// A firing is claimed by one transaction that puts its run (if none
// exists) and moves the job's next firing on (if it is still where the
// claim found it), with the core's rules (schedule.Decide): concurrent
// claimers, a claim racing a pause or a delete, all resolve in it. Runs
// expire with the table's session TTL.

const (
	pfxCron   = "CRON#"
	pfxCronID = "CRONID#"
	skCronID  = "CRONID"
	pfxCJob   = "JOB#"
	pfxCRun   = "RUN#"
)

// ScheduleTimers are the timers of the jobs: EventBridge Scheduler's
// schedules on AWS (ebscheduler.Schedules).
type ScheduleTimers interface {
	// Check refuses, wrapping schedule.ErrInvalid, a job the timers
	// cannot keep.
	Check(j schedule.Job) error
	// Set creates (create) or replaces the job's timer, disabled when the
	// job is paused.
	Set(ctx context.Context, j schedule.Job, create bool) error
	// Remove deletes the job's timer; one already gone is no error.
	Remove(ctx context.Context, id string) error
}

// ScheduleMinEvery is the shortest interval of the AWS engine: EventBridge
// Scheduler fires on the minute.
const ScheduleMinEvery = time.Minute

// Schedule is the AWS schedule.Engine: jobs and runs in the table, timers
// in Timers.
type Schedule struct {
	s      *Store
	timers ScheduleTimers
	now    func() time.Time
	// Lease is how long a claim holds a firing before another claim may
	// take its run over (ScheduleLease by default).
	Lease time.Duration
}

// ScheduleLease is how long a claim holds a firing: long enough to start
// its run (a few writes and an asynchronous invocation), so a delivery
// repeated meanwhile starts nothing, and shorter than the minute Lambda
// waits before it retries an invocation that failed, so the retry of one
// that died after its claim takes the run over and starts it.
const ScheduleLease = 30 * time.Second

var _ schedule.Engine = (*Schedule)(nil)

// Schedule returns the engine on the table with timers; now is its clock
// (time.Now when nil).
func (s *Store) Schedule(timers ScheduleTimers, now func() time.Time) *Schedule {
	if now == nil {
		now = time.Now
	}
	return &Schedule{s: s, timers: timers, now: now, Lease: ScheduleLease}
}

func (e *Schedule) clock() time.Time { return e.now().UTC().Truncate(time.Millisecond) }

func cronPK(owner string) string         { return pfxCron + owner }
func cronJobSK(id string) string         { return pfxCJob + id }
func cronRunPrefix(id string) string     { return pfxCRun + id + "#" }
func cronRunSK(f schedule.Firing) string { return cronRunPrefix(f.JobID) + msKey(f.At) }

// anchor gives an every-job without an anchor its first firing on a whole
// minute, one interval after the next minute starts (EventBridge
// Scheduler's rate() counts from the minute).
func anchor(j schedule.Job, now time.Time) schedule.Job {
	if j.Schedule.Every > 0 && j.Schedule.Anchor.IsZero() {
		start := now.Truncate(time.Minute)
		if start.Before(now) {
			start = start.Add(time.Minute)
		}
		j.Schedule.Anchor = start.Add(time.Duration(j.Schedule.Every))
	}
	return j
}

// jobItem is the job's item.
func jobItem(j schedule.Job) (item, error) {
	def := j
	def.ID, def.Owner, def.Paused = "", "", false
	def.CreatedAt, def.UpdatedAt, def.Next = time.Time{}, time.Time{}, time.Time{}
	b, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	it := key(cronPK(j.Owner), cronJobSK(j.ID))
	it["id"], it["owner"], it["def"] = attrS(j.ID), attrS(j.Owner), &dynamodb.AttributeValueMemberB{Value: b}
	it["paused"], it["created_at"], it["updated_at"] = attrBool(j.Paused), attrTime(j.CreatedAt), attrTime(j.UpdatedAt)
	if !j.Next.IsZero() {
		it["next_at"] = attrTime(j.Next)
	}
	return it, checkSize("job "+j.ID, it)
}

func decodeJob(it item) (schedule.Job, error) {
	var j schedule.Job
	if err := json.Unmarshal(getB(it, "def"), &j); err != nil {
		return schedule.Job{}, fmt.Errorf("decode job %s: %w", getS(it, "id"), err)
	}
	j.ID, j.Owner, j.Paused = getS(it, "id"), getS(it, "owner"), getBool(it, "paused")
	j.CreatedAt, j.UpdatedAt = getTime(it, "created_at"), getTime(it, "updated_at")
	if _, ok := it["next_at"]; ok {
		j.Next = getTime(it, "next_at")
	}
	return j, nil
}

func cronRunItem(owner string, r schedule.Run, exp int64) item {
	it := key(cronPK(owner), cronRunSK(r.Firing))
	it["job_id"], it["at"], it["manual"] = attrS(r.JobID), attrTime(r.At), attrBool(r.Manual)
	it["status"], it["reason"], it["claimed_at"] = attrS(string(r.Status)), attrS(r.Reason), attrTime(r.ClaimedAt)
	if !r.LeaseUntil.IsZero() {
		it["lease_until"] = attrTime(r.LeaseUntil)
	}
	if !r.FinishedAt.IsZero() {
		it["finished_at"] = attrTime(r.FinishedAt)
	}
	if exp != 0 {
		it[attrExpiresAt] = attrN(exp)
	}
	return it
}

func decodeCronRun(it item) schedule.Run {
	r := schedule.Run{Firing: schedule.Firing{JobID: getS(it, "job_id"), At: getTime(it, "at")}, Manual: getBool(it, "manual"),
		Status: schedule.RunStatus(getS(it, "status")), Reason: getS(it, "reason"), ClaimedAt: getTime(it, "claimed_at"),
		Tokens: int(getN(it, "tokens")), Reply: getS(it, "reply"), Delivered: getS(it, "delivered")}
	if _, ok := it["lease_until"]; ok {
		r.LeaseUntil = getTime(it, "lease_until")
	}
	if _, ok := it["finished_at"]; ok {
		r.FinishedAt = getTime(it, "finished_at")
	}
	return r
}

// getJob reads the owner's job.
func (e *Schedule) getJob(ctx context.Context, owner, id string) (schedule.Job, error) {
	it, err := e.s.getItem(ctx, key(cronPK(owner), cronJobSK(id)))
	if err != nil {
		return schedule.Job{}, fmt.Errorf("dynamo: job %q: %w", id, err)
	}
	if it == nil {
		return schedule.Job{}, fmt.Errorf("dynamo: job %q: %w", id, schedule.ErrNotFound)
	}
	return decodeJob(it)
}

// ownerOf returns the owner of job id.
func (e *Schedule) ownerOf(ctx context.Context, id string) (string, error) {
	it, err := e.s.getItem(ctx, key(pfxCronID+id, skCronID))
	if err != nil {
		return "", fmt.Errorf("dynamo: job %q: %w", id, err)
	}
	if it == nil {
		return "", fmt.Errorf("dynamo: job %q: %w", id, schedule.ErrNotFound)
	}
	return getS(it, "owner"), nil
}

// Job returns the job of that id whoever owns it, for the process that
// runs and records its firings (schedule.Replier.Jobs).
func (e *Schedule) Job(ctx context.Context, id string) (schedule.Job, error) {
	owner, err := e.ownerOf(ctx, id)
	if err != nil {
		return schedule.Job{}, err
	}
	return e.getJob(ctx, owner, id)
}

// Create implements schedule.Engine. The job is stored first, then its
// timer made; when that fails the job is removed again.
func (e *Schedule) Create(ctx context.Context, j schedule.Job) (schedule.Job, error) {
	now := e.clock()
	j, err := schedule.Prepare(anchor(j, now), now, ScheduleMinEvery, newJobID)
	if err != nil {
		return schedule.Job{}, err
	}
	if err := e.timers.Check(j); err != nil {
		return schedule.Job{}, err
	}
	it, err := jobItem(j)
	if err != nil {
		return schedule.Job{}, fmt.Errorf("dynamo: create job: %w", err)
	}
	claim := key(pfxCronID+j.ID, skCronID)
	claim["owner"] = attrS(j.Owner)
	err = e.s.transact(ctx, []dynamodb.TransactWriteItem{e.s.put(it, "attribute_not_exists(pk)"), e.s.put(claim, "attribute_not_exists(pk)")})
	if _, ok := canceledAt(err); ok {
		return schedule.Job{}, fmt.Errorf("dynamo: create job: job id %q is taken", j.ID)
	}
	if err != nil {
		return schedule.Job{}, fmt.Errorf("dynamo: create job: %w", err)
	}
	if err := e.timers.Set(ctx, j, true); err != nil {
		if derr := e.deleteJob(ctx, j.Owner, j.ID); derr != nil {
			return schedule.Job{}, fmt.Errorf("dynamo: create job: %w (and removing the job again: %v)", err, derr)
		}
		return schedule.Job{}, fmt.Errorf("dynamo: create job: %w", err)
	}
	return j, nil
}

// saveJob replaces the job's item, which must exist.
func (e *Schedule) saveJob(ctx context.Context, j schedule.Job) error {
	it, err := jobItem(j)
	if err != nil {
		return err
	}
	_, err = e.s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: e.s.table, Item: it, ConditionExpression: aws.String("attribute_exists(pk)")})
	if _, ok := condFailed(err); ok {
		return fmt.Errorf("job %q: %w", j.ID, schedule.ErrNotFound)
	}
	return err
}

// Update implements schedule.Engine: the job, then its timer.
func (e *Schedule) Update(ctx context.Context, j schedule.Job) (schedule.Job, error) {
	now := e.clock()
	old, err := e.getJob(ctx, j.Owner, j.ID)
	if err != nil {
		return schedule.Job{}, err
	}
	j.Schedule.Anchor = time.Time{}
	j = anchor(j, now)
	if err := j.Validate(now, ScheduleMinEvery); err != nil {
		return schedule.Job{}, err
	}
	if err := e.timers.Check(j); err != nil {
		return schedule.Job{}, err
	}
	j.Paused, j.CreatedAt, j.UpdatedAt = old.Paused, old.CreatedAt, now
	j = schedule.Reschedule(j, now)
	if err := e.saveJob(ctx, j); err != nil {
		return schedule.Job{}, fmt.Errorf("dynamo: update job: %w", err)
	}
	if err := e.timers.Set(ctx, j, false); err != nil {
		return schedule.Job{}, fmt.Errorf("dynamo: update job: %w", err)
	}
	return j, nil
}

// Delete implements schedule.Engine: the job and its runs, then its
// timer. A delivery that comes after finds no job and claims nothing.
func (e *Schedule) Delete(ctx context.Context, owner, id string) error {
	if _, err := e.getJob(ctx, owner, id); err != nil {
		return err
	}
	if err := e.deleteJob(ctx, owner, id); err != nil {
		return fmt.Errorf("dynamo: delete job: %w", err)
	}
	if err := e.timers.Remove(ctx, id); err != nil {
		return fmt.Errorf("dynamo: job %s deleted; its schedule is left, and refused when it fires: %w", id, err)
	}
	return nil
}

// deleteJob deletes the job, its id's claim and its runs.
func (e *Schedule) deleteJob(ctx context.Context, owner, id string) error {
	err := e.s.transact(ctx, []dynamodb.TransactWriteItem{
		{Delete: &dynamodb.Delete{TableName: e.s.table, Key: key(cronPK(owner), cronJobSK(id)), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Delete: &dynamodb.Delete{TableName: e.s.table, Key: key(pfxCronID+id, skCronID)}},
	})
	if _, ok := canceledAt(err); ok {
		return fmt.Errorf("job %q: %w", id, schedule.ErrNotFound)
	}
	if err != nil {
		return err
	}
	runs, err := e.s.queryPrefix(ctx, cronPK(owner), cronRunPrefix(id), 0)
	if err != nil {
		return err
	}
	return e.s.deleteKeys(ctx, runs)
}

// SetPaused implements schedule.Engine. A pause is written before the
// timer is disabled, a resume after it is enabled: between the two, a
// delivery is refused as not due.
func (e *Schedule) SetPaused(ctx context.Context, owner, id string, paused bool) (schedule.Job, error) {
	now := e.clock()
	j, err := e.getJob(ctx, owner, id)
	if err != nil || j.Paused == paused {
		return j, err
	}
	j.Paused, j.UpdatedAt = paused, now
	if !paused && !j.Next.IsZero() {
		j = schedule.Reschedule(j, now)
	}
	// A one-shot that fired has no timer left to change.
	timer := func() error {
		if j.Next.IsZero() {
			return nil
		}
		return e.timers.Set(ctx, j, false)
	}
	steps := []func() error{func() error { return e.saveJob(ctx, j) }, timer}
	if !paused {
		slices.Reverse(steps)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return schedule.Job{}, fmt.Errorf("dynamo: pause job: %w", err)
		}
	}
	return j, nil
}

// Get implements schedule.Engine.
func (e *Schedule) Get(ctx context.Context, owner, id string) (schedule.Job, error) {
	return e.getJob(ctx, owner, id)
}

// List implements schedule.Engine.
func (e *Schedule) List(ctx context.Context, owner string) ([]schedule.Job, error) {
	items, err := e.s.queryPrefix(ctx, cronPK(owner), pfxCJob, 0)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list jobs: %w", err)
	}
	out := make([]schedule.Job, 0, len(items))
	for _, it := range items {
		j, err := decodeJob(it)
		if err != nil {
			return nil, fmt.Errorf("dynamo: list jobs: %w", err)
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b schedule.Job) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Page implements schedule.Engine. It reads the owner's jobs, as List
// does (one partition, strongly consistent), to page them in List's order.
func (e *Schedule) Page(ctx context.Context, owner, cursor string, limit int) ([]schedule.Job, string, error) {
	if err := schedule.CheckLimit(limit); err != nil {
		return nil, "", err
	}
	if _, _, err := schedule.ParseCursor(cursor); err != nil {
		return nil, "", err
	}
	all, err := e.List(ctx, owner)
	if err != nil {
		return nil, "", err
	}
	return schedule.PageOf(all, cursor, limit)
}

// Runs implements schedule.Engine.
func (e *Schedule) Runs(ctx context.Context, owner, id string, limit int) ([]schedule.Run, error) {
	if _, err := e.getJob(ctx, owner, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	out, err := e.s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: e.s.table, ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(min(limit, 1000))),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :pfx)"),
		ExpressionAttributeValues: item{":pk": attrS(cronPK(owner)), ":pfx": attrS(cronRunPrefix(id))},
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: runs of job %q: %w", id, err)
	}
	runs := make([]schedule.Run, 0, len(out.Items))
	for _, it := range out.Items {
		runs = append(runs, decodeCronRun(it))
	}
	return runs, nil
}

// runsIn counts the runs of job id not skipped with firings in [start, end).
func (e *Schedule) runsIn(ctx context.Context, owner, id string, start, end time.Time) (int, error) {
	in := &dynamodb.QueryInput{
		TableName: e.s.table, ConsistentRead: aws.Bool(true), Select: dynamodb.SelectCount,
		KeyConditionExpression:    aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		FilterExpression:          aws.String("#st <> :skipped"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":pk": attrS(cronPK(owner)), ":from": attrS(cronRunPrefix(id) + msKey(start)), ":to": attrS(cronRunPrefix(id) + msKey(end.Add(-time.Millisecond))), ":skipped": attrS(string(schedule.RunSkipped))},
	}
	n := 0
	p := dynamodb.NewQueryPaginator(e.s.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += int(out.Count)
	}
	return n, nil
}

// Claim implements schedule.Engine. A delivery's scheduled time is read as
// the job's firing nearest to it (EventBridge Scheduler fires on the
// minute; see align).
func (e *Schedule) Claim(ctx context.Context, f schedule.Firing) (schedule.Run, error) {
	owner, err := e.ownerOf(ctx, f.JobID)
	if err != nil {
		return schedule.Run{}, err
	}
	return e.claim(ctx, owner, f, false)
}

// Trigger implements schedule.Engine.
func (e *Schedule) Trigger(ctx context.Context, owner, id string) (schedule.Run, error) {
	return e.claim(ctx, owner, schedule.Firing{JobID: id, At: e.clock()}, true)
}

// align returns the firing of j nearest to at when it is within half a
// minute (an interval's firing nearest to at), else at.
func align(j schedule.Job, at time.Time) time.Time {
	s := j.Schedule
	if every := time.Duration(s.Every); every > 0 && !s.Anchor.IsZero() {
		k := (at.Sub(s.Anchor) + every/2) / every
		if at.Before(s.Anchor) {
			k = -((s.Anchor.Sub(at) + every/2 - 1) / every)
		}
		return s.Anchor.Add(k * every).UTC()
	}
	const slack = 30 * time.Second
	if n := s.Next(at.Add(-slack)); !n.IsZero() && n.Sub(at).Abs() < slack {
		return n
	}
	return at
}

func (e *Schedule) claim(ctx context.Context, owner string, f schedule.Firing, manual bool) (schedule.Run, error) {
	now := e.clock()
	j, err := e.getJob(ctx, owner, f.JobID)
	if err != nil {
		return schedule.Run{}, err
	}
	f.At = f.At.UTC().Truncate(time.Millisecond)
	if !manual {
		f.At = align(j, f.At)
	}
	runKey := key(cronPK(owner), cronRunSK(f))
	old, err := e.s.getItem(ctx, runKey)
	if err != nil {
		return schedule.Run{}, fmt.Errorf("dynamo: claim %s: %w", f, err)
	}
	if old != nil {
		return e.takeOver(ctx, owner, decodeCronRun(old), j, now)
	}
	if !manual && (j.Paused || j.Next.IsZero() || f.At.Before(j.Next) || f.At.After(now)) {
		return schedule.Run{}, fmt.Errorf("dynamo: job %s at %s: %w", f.JobID, f.At.Format(time.RFC3339Nano), schedule.ErrNotDue)
	}
	start, end := j.Schedule.Day(f.At)
	today, err := e.runsIn(ctx, owner, f.JobID, start, end)
	if err != nil {
		return schedule.Run{}, fmt.Errorf("dynamo: claim %s: %w", f, err)
	}
	d := schedule.Decide(j, f.At, now, today, manual)
	run := schedule.Run{Firing: f, Manual: manual, Status: d.Status, Reason: d.Reason, ClaimedAt: now, Job: j}
	if d.Status == schedule.RunRunning {
		run.LeaseUntil = now.Add(e.Lease)
	} else {
		run.FinishedAt = now
	}
	jobKey := key(cronPK(owner), cronJobSK(f.JobID))
	second := dynamodb.TransactWriteItem{ConditionCheck: &dynamodb.ConditionCheck{TableName: e.s.table, Key: jobKey, ConditionExpression: aws.String("attribute_exists(pk)")}}
	if !manual {
		u := &dynamodb.Update{TableName: e.s.table, Key: jobKey,
			ConditionExpression:       aws.String("next_at = :old AND paused = :false"),
			ExpressionAttributeValues: item{":old": attrTime(j.Next), ":false": attrBool(false)}}
		if d.Next.IsZero() {
			u.UpdateExpression = aws.String("REMOVE next_at")
		} else {
			u.UpdateExpression = aws.String("SET next_at = :next")
			u.ExpressionAttributeValues[":next"] = attrTime(d.Next)
		}
		second = dynamodb.TransactWriteItem{Update: u}
	}
	err = e.s.transact(ctx, []dynamodb.TransactWriteItem{e.s.put(cronRunItem(owner, run, e.s.expiresAt(now)), "attribute_not_exists(pk)"), second})
	if failed, ok := canceledAt(err); ok {
		if len(failed) > 0 && failed[0] {
			return schedule.Run{}, e.claimedErr(ctx, runKey, f)
		}
		if _, err := e.getJob(ctx, owner, f.JobID); err != nil {
			return schedule.Run{}, err
		}
		return schedule.Run{}, fmt.Errorf("dynamo: job %s at %s: the job changed: %w", f.JobID, f.At.Format(time.RFC3339Nano), schedule.ErrNotDue)
	}
	if err != nil {
		return schedule.Run{}, fmt.Errorf("dynamo: claim %s: %w", f, err)
	}
	return run, nil
}

// claimedErr is the error of a claim that lost to another: ErrClaimed
// while the run is running, ErrDone once it ended.
func (e *Schedule) claimedErr(ctx context.Context, runKey item, f schedule.Firing) error {
	it, err := e.s.getItem(ctx, runKey)
	if err != nil {
		return fmt.Errorf("dynamo: claim %s: %w", f, err)
	}
	if it != nil && decodeCronRun(it).Status != schedule.RunRunning {
		return fmt.Errorf("dynamo: job %s at %s: %w", f.JobID, f.At.Format(time.RFC3339Nano), schedule.ErrDone)
	}
	return fmt.Errorf("dynamo: job %s at %s: %w", f.JobID, f.At.Format(time.RFC3339Nano), schedule.ErrClaimed)
}

// takeOver is a claim of a firing that has a run: refused while the run
// holds its lease or when it has ended; after the lease the claim takes
// the run over.
func (e *Schedule) takeOver(ctx context.Context, owner string, old schedule.Run, j schedule.Job, now time.Time) (schedule.Run, error) {
	switch {
	case old.Status != schedule.RunRunning:
		return schedule.Run{}, fmt.Errorf("dynamo: job %s at %s (%s): %w", old.JobID, old.At.Format(time.RFC3339Nano), old.Status, schedule.ErrDone)
	case now.Before(old.LeaseUntil):
		return schedule.Run{}, fmt.Errorf("dynamo: job %s at %s: %w", old.JobID, old.At.Format(time.RFC3339Nano), schedule.ErrClaimed)
	}
	until := now.Add(e.Lease)
	runKey := key(cronPK(owner), cronRunSK(old.Firing))
	_, err := e.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.s.table, Key: runKey,
		UpdateExpression:          aws.String("SET lease_until = :until"),
		ConditionExpression:       aws.String("#st = :running AND lease_until = :old"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":until": attrTime(until), ":running": attrS(string(schedule.RunRunning)), ":old": attrTime(old.LeaseUntil)},
	})
	if _, ok := condFailed(err); ok {
		return schedule.Run{}, e.claimedErr(ctx, runKey, old.Firing)
	}
	if err != nil {
		return schedule.Run{}, fmt.Errorf("dynamo: claim %s: %w", old.Firing, err)
	}
	old.LeaseUntil, old.Resumed, old.Job = until, true, j
	return old, nil
}

// Finish implements schedule.Engine.
func (e *Schedule) Finish(ctx context.Context, f schedule.Firing, r schedule.Result) error {
	now := e.clock()
	f.At = f.At.UTC().Truncate(time.Millisecond)
	owner, err := e.ownerOf(ctx, f.JobID)
	if err != nil {
		return err
	}
	vals := item{":st": attrS(string(r.Status)), ":reason": attrS(r.Reason), ":tokens": attrN(int64(r.Tokens)),
		":reply": attrS(truncateUTF8(r.Reply, schedule.MaxReply)), ":delivered": attrS(r.Delivered), ":now": attrTime(now),
		":running": attrS(string(schedule.RunRunning))}
	update := "SET #st = :st, reason = :reason, tokens = :tokens, reply = :reply, delivered = :delivered, finished_at = :now REMOVE lease_until"
	if exp := e.s.expiresAt(now); exp != 0 {
		update = "SET #st = :st, reason = :reason, tokens = :tokens, reply = :reply, delivered = :delivered, finished_at = :now, " + attrExpiresAt + " = :exp REMOVE lease_until"
		vals[":exp"] = attrN(exp)
	}
	runKey := key(cronPK(owner), cronRunSK(f))
	_, err = e.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: e.s.table, Key: runKey, UpdateExpression: aws.String(update),
		ConditionExpression:       aws.String("#st = :running"),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: vals,
	})
	if _, ok := condFailed(err); ok {
		it, err := e.s.getItem(ctx, runKey)
		switch {
		case err != nil:
			return fmt.Errorf("dynamo: finish %s: %w", f, err)
		case it == nil:
			return fmt.Errorf("dynamo: run %s: %w", f, schedule.ErrNotFound)
		}
		return nil // finished already
	}
	if err != nil {
		return fmt.Errorf("dynamo: finish %s: %w", f, err)
	}
	return nil
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// newJobID returns a short random job id, a valid schedule name.
func newJobID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return "job_" + hex.EncodeToString(b[:])
}
