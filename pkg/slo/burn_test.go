package slo

import (
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

func TestFactorForScalesToTheWindow(t *testing.T) {
	page := BurnPairs[0]
	for _, c := range []struct {
		window time.Duration
		want   float64
	}{
		{30 * 24 * time.Hour, 14.4},
		{28 * 24 * time.Hour, 13.44},
		{7 * 24 * time.Hour, 3.36},
	} {
		if got := page.FactorFor(Objective{Window: c.window}); !same(got, c.want) {
			t.Errorf("14.4 over 1 h for a %s window: %v, want %v", c.window, got, c.want)
		}
	}
}

func TestBurnConditionsSayEachPairOfTheSeverity(t *testing.T) {
	for sev, want := range map[BurnSeverity]string{
		Page:   "above 14.4 over 1h and 5m, or above 6 over 6h and 30m",
		Ticket: "above 1 over 3d and 6h",
	} {
		if got := BurnConditions(sev); got != want {
			t.Errorf("%s: %q, want %q", sev, got, want)
		}
	}
}

// missEvery builds a source of 100 events a step, the given share of which miss: shareAt gets
// how many steps before the grid's last one a step is.
func missEvery(g series.Grid, shareAt func(before int) float64) BurnSource {
	total, good := make([]float64, g.Len), make([]float64, g.Len)
	for i := range total {
		total[i] = 100 / g.Step.Seconds()
		good[i] = total[i] * (1 - shareAt(g.Len-1-i))
	}
	return NewBurnSource(FromCounts(total, good, g.Step), g)
}

// TestBurnValue: a table per window pair. The fine source holds 7 hours at one-minute steps (the
// page pairs), the coarse one 4 days at hourly steps (the ticket pair); the objective is 99 %
// over 30 days, so the factors are the workbook's: a share s of misses burns at 100·s.
func TestBurnValue(t *testing.T) {
	end := time.Unix(1_700_000_000, 0).Truncate(time.Hour)
	fineGrid := series.NewGrid(end.Add(-7*time.Hour), end, time.Minute)
	coarseGrid := series.NewGrid(end.Add(-4*24*time.Hour), end, time.Hour)
	none := func(int) float64 { return 0 }
	// during is share for the steps from..to (exclusive) before the end, else 0.
	during := func(from, to int, share float64) func(int) float64 {
		return func(k int) float64 {
			if k >= from && k < to {
				return share
			}
			return 0
		}
	}
	month, week := 30*24*time.Hour, 7*24*time.Hour
	for _, c := range []struct {
		name         string
		window       time.Duration
		fine, coarse func(int) float64
		severity     BurnSeverity
		want         float64
	}{
		{"1h/5m: both above 14.4 page at the lesser (1 h: (5·30 + 55·15) / 60)", month,
			func(k int) float64 { return during(0, 5, 0.30)(k) + during(5, 60, 0.15)(k) }, none, Page, 16.25},
		{"1h/5m: the 1 h above but the 5 m below (the burn stopped) does not page", month,
			during(5, 60, 0.20), none, Page, 0},
		{"1h/5m: the 5 m above but the 1 h below (a blip) does not page", month,
			during(0, 5, 1), none, Page, 0},
		{"6h/30m: both above 6 page at the lesser", month,
			during(0, 360, 0.08), none, Page, 8},
		{"6h/30m: the 6 h above but the 30 m below does not page", month,
			during(30, 360, 0.08), none, Page, 0},
		{"6h/30m: a page pair holding is no ticket without the 3 d", month,
			during(0, 360, 0.08), none, Ticket, 0},
		{"3d/6h: both above 1 make a ticket at the lesser", month,
			none, during(0, 96, 0.02), Ticket, 2},
		{"3d/6h: the 3 d above but the 6 h below makes no ticket", month,
			none, during(6, 96, 0.02), Ticket, 0},
		{"3d/6h: a ticket's burn does not page", month,
			during(0, 420, 0.02), during(0, 96, 0.02), Page, 0},
		{"a 7-day window scales 14.4 to 3.36: 4 % of misses page", week,
			during(0, 60, 0.04), none, Page, 4},
		{"the same misses under a 30-day window do not page", month,
			during(0, 60, 0.04), none, Page, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Objective{Target: 0.99, Window: c.window}
			got := BurnValue(o, c.severity, missEvery(fineGrid, c.fine), missEvery(coarseGrid, c.coarse), end)
			if !same(got, c.want) {
				t.Errorf("%s value %v, want %v", c.severity, got, c.want)
			}
		})
	}
}

func TestBurnValueWithoutEventsIsUnknown(t *testing.T) {
	end := time.Unix(1_700_000_000, 0)
	g := series.NewGrid(end.Add(-7*time.Hour), end, time.Minute)
	empty := NewBurnSource(FromCounts(series.NaNs(g.Len), nil, time.Minute), g)
	if got := BurnValue(Objective{Target: 0.99, Window: 30 * 24 * time.Hour}, Page, empty, empty, end); !math.IsNaN(got) {
		t.Errorf("value %v without events, want NaN (no data, not all clear)", got)
	}
}

// TestBurnAlerts: two instances of one model over 7 hours at one-minute steps, the range the
// last 10 minutes; a misses 30 % of its requests in the last hour while kv_cache_saturated is
// active, b none.
func TestBurnAlerts(t *testing.T) {
	end := time.Unix(1_700_000_000, 0).Truncate(time.Hour)
	g := series.NewGrid(end.Add(-7*time.Hour), end, time.Minute)
	set := series.NewSet(g)
	a, b := series.Key{Instance: "a", Model: "m"}, series.Key{Instance: "b", Model: "m"}
	put := func(k series.Key, sig series.Signal, at func(i int) float64) {
		s := series.NewSeries(sig, k, g.Len)
		for i := range s.Values {
			s.Values[i] = at(i)
		}
		set.Put(s)
	}
	lastHour := func(v float64) func(int) float64 {
		return func(i int) float64 {
			if i > g.Len-1-60 {
				return v
			}
			return 0
		}
	}
	for _, k := range []series.Key{a, b} {
		put(k, series.RequestRate, func(int) float64 { return 1 })
		put(k, series.ErrorRatio, func(int) float64 { return 0 })
	}
	put(a, series.AbortRatio, lastHour(0.3))
	put(b, series.AbortRatio, func(int) float64 { return 0 })
	objective := Objective{Name: "up", Indicator: Availability, Target: 0.99, Window: 30 * 24 * time.Hour}
	findings := []diagnosis.Finding{{Rule: "kv_cache_saturated", Key: a, Start: g.Time(g.Len - 60), End: end}}
	from := end.Add(-10 * time.Minute)

	times, got := BurnAlerts([]Objective{objective}, set, set, from, findings, "")
	if len(times) != 10 || !times[len(times)-1].Equal(end) {
		t.Fatalf("times %v, want the range's 10 steps after its start, to its end", times)
	}
	type want struct {
		instance string
		severity BurnSeverity
		last     float64
		top      string
	}
	// a: 30 % missed over the last hour and 5 minutes (burn 30 > 14.4); the ticket's 3 d read as
	// the 7 h held: 60 of its 421 steps at burn 30, its 6 h 30 · 60 / 360, the lesser the 3 d's.
	wants := []want{
		{"a", Page, 30, "kv_cache_saturated"},
		{"a", Ticket, 30.0 * 60 / float64(g.Len), "kv_cache_saturated"},
		{"b", Page, 0, ""},
		{"b", Ticket, 0, ""},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d series, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		s := got[i]
		if len(s.Values) != len(times) {
			t.Fatalf("series %d has %d values for %d times", i, len(s.Values), len(times))
		}
		if s.Key.Instance != w.instance || s.Severity != w.severity || !same(s.Values[len(s.Values)-1], w.last) || s.TopRule != w.top {
			t.Errorf("series %d: %s %s ends at %v top %q; want %+v", i, s.Key.Instance, s.Severity, s.Values[len(s.Values)-1], s.TopRule, w)
		}
	}
	_, pages := BurnAlerts([]Objective{objective}, set, set, from, findings, Page)
	if len(pages) != 2 || pages[0].Severity != Page || pages[1].Severity != Page {
		t.Errorf("asked for pages only: %+v", pages)
	}
}
