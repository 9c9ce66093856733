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
