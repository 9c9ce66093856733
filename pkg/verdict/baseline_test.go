package verdict

import (
	"strings"
	"testing"
	"time"
)

func TestBeforeIsTheWindowOfTheSameLengthEndingWhereTheCurrentStarts(t *testing.T) {
	now := time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC)
	got := Before(Window{From: now.Add(-time.Hour), To: now})
	if !got.From.Equal(now.Add(-2*time.Hour)) || !got.To.Equal(now.Add(-time.Hour)) {
		t.Fatalf("baseline %v to %v", got.From, got.To)
	}
}

func TestCheckBaseline(t *testing.T) {
	now := time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC)
	current := Window{From: now.Add(-time.Hour), To: now}
	at := func(d time.Duration) time.Time { return now.Add(d) }
	cases := []struct {
		name   string
		b      Window
		wantTo time.Time
		err    string
	}{
		{"ending before the range", Window{at(-3 * time.Hour), at(-2 * time.Hour)}, at(-2 * time.Hour), ""},
		{"ending where the range starts", Window{at(-2 * time.Hour), at(-time.Hour)}, at(-time.Hour), ""},
		{"touching: a second into the range is cut at its start", Window{at(-2 * time.Hour), at(-time.Hour + time.Second)}, at(-time.Hour), ""},
		{"a minute into the range still touches", Window{at(-2 * time.Hour), at(-time.Hour + Touch)}, at(-time.Hour), ""},
		{"past a minute it overlaps", Window{at(-2 * time.Hour), at(-time.Hour + Touch + time.Second)}, time.Time{}, "overlaps"},
		{"starting inside the range", Window{at(-30 * time.Minute), at(-10 * time.Minute)}, time.Time{}, "is not before"},
		{"ending before it starts", Window{at(-2 * time.Hour), at(-3 * time.Hour)}, time.Time{}, "after baselineFrom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CheckBaseline(c.b, current)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.From.Equal(c.b.From) || !got.To.Equal(c.wantTo) {
				t.Errorf("baseline %v to %v, want %v to %v", got.From, got.To, c.b.From, c.wantTo)
			}
		})
	}
}

func TestParseBaselineReadsAbsoluteAndRelativeTimes(t *testing.T) {
	now := time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC)
	current := Window{From: now.Add(-time.Hour), To: now}
	week := now.Add(-7 * 24 * time.Hour)
	cases := []struct {
		name, from, to string
		want           Window
	}{
		{"RFC 3339", "2026-08-01T10:00:00Z", "2026-08-01T11:30:00Z",
			Window{From: time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 8, 1, 11, 30, 0, 0, time.UTC)}},
		{"Grafana relative time", "now-7d", "now-7d+2h", Window{From: week, To: week.Add(2 * time.Hour)}},
		{"without baselineTo the baseline lasts as long as the range", "now-7d", "", Window{From: week, To: week.Add(time.Hour)}},
		{"epoch milliseconds", "1785578400000", "1785582000000", Window{From: time.UnixMilli(1785578400000), To: time.UnixMilli(1785582000000)}},
		{"ending where the range starts", "now-2h", "now-1h", Window{From: now.Add(-2 * time.Hour), To: now.Add(-time.Hour)}},
		{"touching the range as Grafana's and the plugin's now differ", "2026-08-08T10:00:00Z", "2026-08-08T11:00:00.250Z", Window{From: now.Add(-2 * time.Hour), To: now.Add(-time.Hour)}},
		{"without either end, the window just before the range", "", "", Window{From: now.Add(-2 * time.Hour), To: now.Add(-time.Hour)}},
		{"baselineTo alone: as long as the range", "", "now-1d", Window{From: now.Add(-25 * time.Hour), To: now.Add(-24 * time.Hour)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseBaseline(c.from, c.to, current, now)
			if err != nil {
				t.Fatal(err)
			}
			if !got.From.Equal(c.want.From) || !got.To.Equal(c.want.To) {
				t.Errorf("baseline %v to %v, want %v to %v", got.From, got.To, c.want.From, c.want.To)
			}
		})
	}
}
