package cloudtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// The schedule group, the schedules' role and their target (the scheduler
// function) Setup configures (SCHEDULE_GROUP, SCHEDULER_ROLE_ARN,
// SCHEDULER_TARGET_ARN).
const (
	SchedulerGroup     = "lambdaclaw-check-ins"
	SchedulerRoleARN   = "arn:aws:iam::123456789012:role/Lambdaclaw-SchedulerRole"
	SchedulerTargetARN = "arn:aws:lambda:us-east-1:123456789012:function:Lambdaclaw-scheduler"
	// SchedulerDeadLetterARN is the queue of deliveries the target did
	// not take (SCHEDULER_DEAD_LETTER_ARN).
	SchedulerDeadLetterARN = "arn:aws:sqs:us-east-1:123456789012:Lambdaclaw-ScheduleFailures"
)

// Scheduler is a fake of the EventBridge Scheduler API (REST JSON) for the
// schedules of its groups: CreateSchedule (POST /schedules/{Name}),
// UpdateSchedule (PUT /schedules/{Name}), DeleteSchedule (DELETE
// /schedules/{Name}?groupName=…) and GetSchedule (GET), with the errors
// the service answers: ConflictException (409) for a name taken,
// ResourceNotFoundException (404) for a schedule or group that does not
// exist, ValidationException (400) for a request the service's model
// refuses (awsmodel: such as an empty time zone; the test fails too) or a
// bad expression, time zone, flexible window or target. The error type travels in the
// X-Amzn-ErrorType header, the message in the body's Message.
//
// It also plays the service's timer: Due returns the inputs of the
// firings due at the fake clock's now, as the service would send them to
// the target, the context attributes <aws.scheduler.scheduled-time>,
// <aws.scheduler.schedule-arn>, <aws.scheduler.execution-id> and
// <aws.scheduler.attempt-number> filled in. Expressions are evaluated
// as the service does: at() once, rate() from the StartDate (from the
// schedule's creation without one), cron() in its time zone, where a
// local time that does not exist is skipped and one that occurs twice
// fires once. Of cron's special characters it takes * ? , - and /; L, W
// and # it refuses.
type Scheduler struct {
	URL string

	t         testing.TB
	model     *awsmodel.Model
	now       func() time.Time
	mu        sync.Mutex
	groups    map[string]bool
	schedules map[string]*FakeSchedule // by group/name
}

// FakeSchedule is a schedule as the fake keeps it.
type FakeSchedule struct {
	Name, Group, Expression, Timezone, State, ActionAfterCompletion, FlexibleMode string
	StartDate                                                                     time.Time
	TargetArn, RoleArn, Input                                                     string
	// The target's retry policy and dead-letter queue (zero when none).
	RetryAttempts, RetryAgeSeconds int
	DeadLetterArn                  string
	// from is when the schedule was created or last changed: it fires
	// after it; last is its latest firing delivered.
	from, last time.Time
}

// NewScheduler starts the fake with the group SchedulerGroup; now is its
// clock (time.Now when nil).
func NewScheduler(t testing.TB, now func() time.Time) *Scheduler {
	if now == nil {
		now = time.Now
	}
	f := &Scheduler{t: t, model: awsmodel.Load(t, "scheduler"), now: now, groups: map[string]bool{SchedulerGroup: true}, schedules: map[string]*FakeSchedule{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = srv.URL
	t.Cleanup(srv.Close)
	return f
}

// Schedules returns copies of the schedules, by name.
func (f *Scheduler) Schedules() map[string]FakeSchedule {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]FakeSchedule{}
	for _, s := range f.schedules {
		out[s.Name] = *s
	}
	return out
}

// schedulerRequest is the body of CreateSchedule and UpdateSchedule.
type schedulerRequest struct {
	GroupName                  string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	StartDate                  *float64
	State                      string
	ActionAfterCompletion      string
	Description                string
	FlexibleTimeWindow         *struct {
		Mode                   string
		MaximumWindowInMinutes *int
	}
	Target *struct {
		Arn, RoleArn, Input string
		RetryPolicy         *struct {
			MaximumRetryAttempts, MaximumEventAgeInSeconds int
		}
		DeadLetterConfig *struct{ Arn string }
	}
}

func (f *Scheduler) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		schedulerError(w, http.StatusBadRequest, "ValidationException", "reading the body: "+err.Error())
		return
	}
	op, in, err := f.model.FromREST(r, "", body)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		schedulerError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	name, _ := in["Name"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch op {
	case "CreateSchedule", "UpdateSchedule":
		var req schedulerRequest
		if err := json.Unmarshal(body, &req); err != nil {
			schedulerError(w, http.StatusBadRequest, "ValidationException", "invalid request body: "+err.Error())
			return
		}
		group := cmp.Or(req.GroupName, "default")
		if !f.groups[group] {
			schedulerError(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule group "+group+" does not exist.")
			return
		}
		k := group + "/" + name
		old, exists := f.schedules[k]
		switch {
		case op == "CreateSchedule" && exists:
			schedulerError(w, http.StatusConflict, "ConflictException", "Schedule "+name+" already exists.")
			return
		case op == "UpdateSchedule" && !exists:
			schedulerError(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
			return
		}
		s, msg := newFakeSchedule(name, group, req)
		if msg != "" {
			schedulerError(w, http.StatusBadRequest, "ValidationException", msg)
			return
		}
		s.from = f.now().UTC()
		if exists {
			s.last = old.last
		}
		f.schedules[k] = s
		writeJSON(w, map[string]string{"ScheduleArn": s.arn()})
	case "DeleteSchedule", "GetSchedule":
		group, _ := in["GroupName"].(string)
		group = cmp.Or(group, "default")
		s, exists := f.schedules[group+"/"+name]
		if !exists {
			schedulerError(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
			return
		}
		if op == "GetSchedule" {
			writeJSON(w, map[string]any{"Name": s.Name, "GroupName": s.Group, "Arn": s.arn(), "ScheduleExpression": s.Expression,
				"ScheduleExpressionTimezone": s.Timezone, "State": s.State, "ActionAfterCompletion": s.ActionAfterCompletion,
				"FlexibleTimeWindow": map[string]string{"Mode": s.FlexibleMode},
				"Target":             map[string]string{"Arn": s.TargetArn, "RoleArn": s.RoleArn, "Input": s.Input}})
			return
		}
		delete(f.schedules, group+"/"+name)
		writeJSON(w, map[string]string{})
	default:
		f.t.Errorf("the fake Scheduler does not serve %s", op)
		schedulerError(w, http.StatusBadRequest, "ValidationException", "the fake does not serve "+op)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// schedulerError answers an error as EventBridge Scheduler does.
func schedulerError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", kind)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

// newFakeSchedule checks a request, which the model allowed, as the
// service does; msg is the ValidationException's message when it is
// refused.
func newFakeSchedule(name, group string, req schedulerRequest) (s *FakeSchedule, msg string) {
	s = &FakeSchedule{Name: name, Group: group, Expression: req.ScheduleExpression, Timezone: cmp.Or(req.ScheduleExpressionTimezone, "UTC"),
		State: cmp.Or(req.State, "ENABLED"), ActionAfterCompletion: cmp.Or(req.ActionAfterCompletion, "NONE")}
	if _, err := time.LoadLocation(s.Timezone); err != nil {
		return nil, "Invalid time zone: " + s.Timezone
	}
	s.FlexibleMode = req.FlexibleTimeWindow.Mode
	s.TargetArn, s.RoleArn, s.Input = req.Target.Arn, req.Target.RoleArn, req.Target.Input
	if p := req.Target.RetryPolicy; p != nil {
		s.RetryAttempts, s.RetryAgeSeconds = p.MaximumRetryAttempts, p.MaximumEventAgeInSeconds
	}
	if d := req.Target.DeadLetterConfig; d != nil {
		s.DeadLetterArn = d.Arn
	}
	if req.StartDate != nil {
		sec, frac := math.Modf(*req.StartDate)
		s.StartDate = time.Unix(int64(sec), int64(frac*1e9)).UTC().Truncate(time.Second)
	}
	if _, err := s.parse(); err != nil {
		return nil, "Invalid Schedule Expression " + s.Expression + ": " + err.Error()
	}
	return s, ""
}

func (s *FakeSchedule) arn() string {
	return "arn:aws:scheduler:us-east-1:123456789012:schedule/" + s.Group + "/" + s.Name
}

// expr is a parsed schedule expression: exactly one of at, every, cron.
type expr struct {
	at    time.Time
	every time.Duration
	cron  schedule.Schedule
}

var (
	atExpr   = regexp.MustCompile(`^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$`)
	rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)
	cronExpr = regexp.MustCompile(`^cron\((.*)\)$`)
)

func (s *FakeSchedule) parse() (expr, error) {
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return expr{}, err
	}
	if m := atExpr.FindStringSubmatch(s.Expression); m != nil {
		at, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], loc)
		return expr{at: at.UTC()}, err
	}
	if m := rateExpr.FindStringSubmatch(s.Expression); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 {
			return expr{}, fmt.Errorf("the rate's value must be a positive integer")
		}
		if (n == 1) != !strings.HasSuffix(m[2], "s") {
			return expr{}, fmt.Errorf("use the singular unit with 1 and the plural otherwise")
		}
		unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
		return expr{every: time.Duration(n) * unit}, nil
	}
	if m := cronExpr.FindStringSubmatch(s.Expression); m != nil {
		std, err := standardCron(m[1])
		if err != nil {
			return expr{}, err
		}
		return expr{cron: schedule.Schedule{Cron: std, TZ: s.Timezone}}, nil
	}
	return expr{}, fmt.Errorf("want at(…), rate(…) or cron(…)")
}

// standardCron reads AWS's six cron fields (minutes hours day-of-month
// month day-of-week year) into the five of standard cron, day-of-week
// from 0 = Sunday.
func standardCron(s string) (string, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return "", fmt.Errorf("a cron expression has six fields, not %d", len(f))
	}
	if strings.ContainsAny(s, "LW#") {
		return "", fmt.Errorf("the fake does not evaluate L, W or #")
	}
	if (f[2] == "?") == (f[4] == "?") {
		return "", fmt.Errorf("give ? in exactly one of day-of-month and day-of-week")
	}
	if f[5] != "*" {
		return "", fmt.Errorf("the fake evaluates only * as the year")
	}
	dow := f[4]
	if dow != "?" {
		var parts []string
		for part := range strings.SplitSeq(dow, ",") {
			nums := strings.Split(part, "-")
			for i, n := range nums {
				v, err := strconv.Atoi(n)
				if err != nil || v < 1 || v > 7 {
					return "", fmt.Errorf("day-of-week %q: want 1-7 (1 = Sunday)", n)
				}
				nums[i] = strconv.Itoa(v - 1)
			}
			parts = append(parts, strings.Join(nums, "-"))
		}
		dow = strings.Join(parts, ",")
	}
	q := func(v string) string {
		if v == "?" {
			return "*"
		}
		return v
	}
	return strings.Join([]string{f[0], f[1], q(f[2]), f[3], q(dow)}, " "), nil
}

// latest returns the schedule's latest firing after after and at or
// before now.
func (s *FakeSchedule) latest(after, now time.Time) (time.Time, bool) {
	e, err := s.parse()
	if err != nil {
		return time.Time{}, false
	}
	switch {
	case !e.at.IsZero():
		return e.at, e.at.After(after) && !e.at.After(now)
	case e.every > 0:
		start := s.StartDate
		if start.IsZero() {
			start = s.from.Truncate(time.Minute).Add(e.every)
		}
		if now.Before(start) {
			return time.Time{}, false
		}
		t := start.Add(now.Sub(start) / e.every * e.every)
		return t, t.After(after)
	}
	var t time.Time
	for n := e.cron.Next(after); !n.IsZero() && !n.After(now); n = e.cron.Next(n) {
		t = n
	}
	return t, !t.IsZero()
}

// Due returns the inputs the enabled schedules send their targets at the
// clock's now: per schedule, its latest firing not delivered yet (a
// schedule fires after it was created or changed), in name order. A
// one-shot with ActionAfterCompletion DELETE is deleted once it fired.
func (f *Scheduler) Due() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now().UTC()
	keys := make([]string, 0, len(f.schedules))
	for k := range f.schedules {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []json.RawMessage
	for _, k := range keys {
		s := f.schedules[k]
		if s.State != "ENABLED" {
			continue
		}
		after := s.from
		if s.last.After(after) {
			after = s.last
		}
		t, ok := s.latest(after, now)
		if !ok {
			continue
		}
		s.last = t
		out = append(out, s.input(t, 0))
		if e, _ := s.parse(); !e.at.IsZero() && s.ActionAfterCompletion == "DELETE" {
			delete(f.schedules, k)
		}
	}
	return out
}

// Input returns what schedule name sends its target for the firing at:
// a delivery again, attempt marks a retry (0 the first). It is nil when
// there is no such schedule.
func (f *Scheduler) Input(name string, at time.Time, attempt int) json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.schedules {
		if s.Name == name {
			return s.input(at, attempt)
		}
	}
	return nil
}

func (s *FakeSchedule) input(at time.Time, attempt int) json.RawMessage {
	return json.RawMessage(strings.NewReplacer(
		"<aws.scheduler.scheduled-time>", at.UTC().Format(time.RFC3339),
		"<aws.scheduler.schedule-arn>", s.arn(),
		"<aws.scheduler.execution-id>", fmt.Sprintf("%s-%d", s.Name, at.Unix()),
		"<aws.scheduler.attempt-number>", strconv.Itoa(attempt+1),
	).Replace(s.Input))
}

// Client returns an EventBridge Scheduler client of the fake, with the
// static credentials local/local in us-east-1.
func (f *Scheduler) Client() *awsapi.Scheduler {
	c, err := awsapi.NewScheduler(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, f.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}
