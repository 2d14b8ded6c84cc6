package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Target
		wantErr string
	}{
		{"", Target{}, ""},
		{"none", Target{}, ""},
		{"telegram:-100123", Target{Kind: "telegram", To: "-100123"}, ""},
		{"webhook:https://example.com/hook", Target{Kind: "webhook", To: "https://example.com/hook"}, ""},
		{"ws:ada", Target{Kind: "ws", To: "ada"}, ""},
		{"telegram:abc", Target{}, "not a number"},
		{"webhook:file:///etc/passwd", Target{}, "http or https"},
		{"webhook:https://u:p@example.com/", Target{}, "without credentials"},
		{"email:a@b", Target{}, "unknown kind"},
		{"telegram", Target{}, "want none"},
	} {
		got, err := ParseTarget(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseTarget(%q) error %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, _ := ParseTarget(got.String()); back != got {
			t.Errorf("ParseTarget(%q).String() does not read back: %q", c.in, got.String())
		}
	}
}

func TestFiringRoundTrip(t *testing.T) {
	f := Firing{JobID: "job@odd", At: time.UnixMilli(1736154060123).UTC()}
	got, err := ParseFiring(f.String())
	if err != nil || !cmp.Equal(got, f) {
		t.Errorf("ParseFiring(%q) = %+v, %v; want %+v", f.String(), got, err, f)
	}
	if f.RunID() == (Firing{JobID: f.JobID, At: f.At.Add(time.Millisecond)}).RunID() {
		t.Error("two firings share a run id")
	}
	for _, bad := range []string{"", "@1", "job", "job@x"} {
		if _, err := ParseFiring(bad); err == nil {
			t.Errorf("ParseFiring(%q) succeeded", bad)
		}
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	err := Job{Schedule: Schedule{Every: Duration(time.Millisecond)}}.Validate(now, time.Second)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v, want ErrInvalid", err)
	}
	for _, want := range []string{"owner is empty", "agent is empty", "message is empty", "shorter than 1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestLatestEveryCounts(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Schedule{Every: Duration(10 * time.Second), Anchor: t0}
	latest, missed := s.Latest(t0, t0.Add(35*time.Second))
	if !latest.Equal(t0.Add(30*time.Second)) || missed != 3 {
		t.Errorf("Latest = %v, %d; want +30s, 3", latest, missed)
	}
	c := Schedule{Cron: "*/15 * * * *"}
	latest, missed = c.Latest(t0, t0.Add(time.Hour+time.Minute))
	if !latest.Equal(t0.Add(time.Hour)) || missed != 4 {
		t.Errorf("cron Latest = %v, %d; want +1h, 4", latest, missed)
	}
}

// TestValidateCronMustFire checks that a cron expression is refused when no
// time in the next five years matches it, computed on its zone's clock.
func TestValidateCronMustFire(t *testing.T) {
	for _, c := range []struct {
		name, cron, tz string
		now            time.Time
		wantErr        string
	}{
		{"february 31st", "0 0 31 2 *", "", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), `cron "0 0 31 2 *" never fires`},
		{"february 30th in a zone", "0 9 30 2 *", "Europe/Berlin", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), "in Europe/Berlin"},
		{"the 31st of short months", "0 0 31 4,6,9,11 *", "", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), "never fires"},
		{"a day of the week rescues it", "0 0 31 2 MON", "", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), ""},
		{"february 29th", "0 0 29 2 *", "", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), ""},
		// 2100 is no leap year: from March 2097 the next February 29th is
		// in 2104, beyond five years.
		{"february 29th eight years off", "0 0 29 2 *", "", time.Date(2097, 3, 1, 0, 0, 0, 0, time.UTC), "never fires"},
		// Five years from 2099-02-28T12:00Z ends before midnight UTC on
		// 2104-02-29, but after midnight there in UTC+14.
		{"just beyond the horizon in UTC", "0 0 29 2 *", "", time.Date(2099, 2, 28, 12, 0, 0, 0, time.UTC), "never fires"},
		{"just within it in UTC+14", "0 0 29 2 *", "Pacific/Kiritimati", time.Date(2099, 2, 28, 12, 0, 0, 0, time.UTC), ""},
		// 02:30 does not exist in Berlin on 2026-03-29, when clocks spring
		// forward: that day is skipped and the next year's fires.
		{"only firing this year falls in the spring gap", "30 2 29 3 *", "Europe/Berlin", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), ""},
		// 02:30 occurs twice in Berlin on 2026-10-25: it fires once.
		{"repeated in the autumn", "30 2 25 10 *", "Europe/Berlin", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), ""},
		{"descriptor", "@yearly", "America/New_York", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Schedule{Cron: c.cron, TZ: c.tz}.Validate(c.now, time.Minute)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want it accepted", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Validate: %v, want an error saying %q", err, c.wantErr)
			}
		})
	}
}
