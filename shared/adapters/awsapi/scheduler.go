package awsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	smithyrand "github.com/aws/smithy-go/rand"
)

// Scheduler is the EventBridge Scheduler API (restJson1), for the
// schedules of check-ins: CreateSchedule, UpdateSchedule and
// DeleteSchedule.
type Scheduler struct{ c *Client }

// NewScheduler returns an EventBridge Scheduler client of cfg; endpoint,
// when not empty, overrides the Region's.
func NewScheduler(cfg aws.Config, endpoint string) (*Scheduler, error) {
	c, err := newClient(cfg, schedulerService, endpoint)
	return &Scheduler{c}, err
}

// Schedule is a schedule as CreateSchedule and UpdateSchedule take it
// (what lambdaclaw sets of it).
type Schedule struct {
	Name                       string `json:"-"`
	GroupName                  string `json:",omitempty"`
	ScheduleExpression         string
	ScheduleExpressionTimezone string `json:",omitempty"`
	StartDate                  *Time  `json:",omitempty"`
	// State is ENABLED or DISABLED.
	State       string `json:",omitempty"`
	Description string `json:",omitempty"`
	// ActionAfterCompletion is NONE or DELETE.
	ActionAfterCompletion string `json:",omitempty"`
	FlexibleTimeWindow    struct{ Mode string }
	Target                ScheduleTarget
}

// ScheduleTarget is what a schedule invokes, and how it retries.
type ScheduleTarget struct {
	Arn, RoleArn     string
	Input            string            `json:",omitempty"`
	RetryPolicy      *RetryPolicy      `json:",omitempty"`
	DeadLetterConfig *DeadLetterConfig `json:",omitempty"`
}

// RetryPolicy is a target's retries.
type RetryPolicy struct {
	MaximumRetryAttempts, MaximumEventAgeInSeconds int
}

// DeadLetterConfig names the queue of deliveries the target did not take.
type DeadLetterConfig struct{ Arn string }

// CreateSchedule creates s; a name taken is ConflictException, a group
// that does not exist ResourceNotFoundException.
func (s *Scheduler) CreateSchedule(ctx context.Context, sc Schedule) error {
	return s.put(ctx, "CreateSchedule", http.MethodPost, sc)
}

// UpdateSchedule replaces s; one that does not exist is
// ResourceNotFoundException.
func (s *Scheduler) UpdateSchedule(ctx context.Context, sc Schedule) error {
	return s.put(ctx, "UpdateSchedule", http.MethodPut, sc)
}

// put sends a schedule with a client token of its own (the same on every
// attempt: the SDK's idempotency token).
func (s *Scheduler) put(ctx context.Context, op, method string, sc Schedule) error {
	token, err := newToken()
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.c.svc.Name, op, err)
	}
	body, err := json.Marshal(struct {
		Schedule
		ClientToken string
	}{sc, token})
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.c.svc.Name, op, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	_, err = s.c.do(ctx, request{op: op, method: method, path: "/schedules/" + escapeLabel(sc.Name), header: h, body: body})
	return err
}

// DeleteSchedule deletes the schedule name of group; one that does not
// exist is ResourceNotFoundException.
func (s *Scheduler) DeleteSchedule(ctx context.Context, group, name string) error {
	token, err := newToken()
	if err != nil {
		return fmt.Errorf("%s DeleteSchedule: %w", s.c.svc.Name, err)
	}
	q := url.Values{"clientToken": {token}}
	if group != "" {
		q.Set("groupName", group)
	}
	// A space is %20 in a query, as the SDK sends it, not a form's +.
	query := strings.ReplaceAll(q.Encode(), "+", "%20")
	_, err = s.c.do(ctx, request{op: "DeleteSchedule", method: http.MethodDelete, path: "/schedules/" + escapeLabel(name) + "?" + query})
	return err
}

// newToken returns a random UUID, as the SDK makes idempotency tokens.
func newToken() (string, error) {
	id, err := smithyrand.NewUUID(smithyrand.Reader).GetUUID()
	if err != nil {
		return "", fmt.Errorf("a client token: %w", err)
	}
	return id, nil
}

// MarshalJSON writes seconds since the epoch, with a fraction.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)), nil
}
