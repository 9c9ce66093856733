package series

import (
	"math"
	"testing"
	"time"
)

func TestGridIndexIsTheLastPointAtOrBefore(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	g := NewGrid(start, start.Add(time.Minute), 15*time.Second)
	if g.Len != 5 || !g.End().Equal(start.Add(time.Minute)) {
		t.Fatalf("grid %+v: want 5 points ending at %s", g, start.Add(time.Minute))
	}
	tests := []struct {
		at     time.Duration
		want   int
		wantOK bool
	}{
		{-time.Second, 0, false},
		{0, 0, true},
		{14 * time.Second, 0, true},
		{15 * time.Second, 1, true},
		{time.Hour, 4, true},
	}
	for _, tt := range tests {
		i, ok := g.Index(start.Add(tt.at))
		if i != tt.want || ok != tt.wantOK {
			t.Errorf("Index(start%+v) = %d, %v; want %d, %v", tt.at, i, ok, tt.want, tt.wantOK)
		}
	}
}

func TestSetKeepsSeriesPerKeyInOrder(t *testing.T) {
	s := NewSet(NewGrid(time.Unix(0, 0), time.Unix(30, 0), 15*time.Second))
	b, a := Key{Instance: "b:8000", Model: "m"}, Key{Instance: "a:8000", Model: "m"}
	x := NewSeries(KVUsage, b, s.Grid.Len)
	x.Values[1] = 0.5
	s.Put(x)
	s.Put(NewSeries(Running, a, s.Grid.Len))
	if keys := s.Keys(); len(keys) != 2 || keys[0] != a || keys[1] != b {
		t.Errorf("Keys() = %v, want a then b", keys)
	}
	if v := s.Value(b, KVUsage, 1); v != 0.5 {
		t.Errorf("Value = %v, want 0.5", v)
	}
	if v := s.Value(a, KVUsage, 1); !math.IsNaN(v) {
		t.Errorf("a missing signal reads %v, want NaN", v)
	}
}

// TestFormat: one wording for a missing value, the verb's own text otherwise.
func TestFormat(t *testing.T) {
	cases := []struct {
		name   string
		format string
		v      float64
		want   string
	}{
		{"a number", "%.3g s", 0.3125, "0.312 s"},
		{"a percentage", "%.0f%%", 97.4, "97%"},
		{"NaN is missing", "%.3g", math.NaN(), Missing},
		{"an infinity is missing", "%.3g", math.Inf(1), Missing},
		{"a negative infinity is missing", "%.0f%%", math.Inf(-1), Missing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Format(tc.format, tc.v); got != tc.want {
				t.Errorf("Format(%q, %v) = %q; want %q", tc.format, tc.v, got, tc.want)
			}
		})
	}
}

func TestNaNs(t *testing.T) {
	v := NaNs(3)
	if len(v) != 3 || !math.IsNaN(v[0]) || !math.IsNaN(v[2]) {
		t.Errorf("NaNs(3) = %v; want three NaNs", v)
	}
}

// TestHistogramAboveAndTop: what a histogram's bucket rates say of one step's observations.
// Cumulative rates 1, 3, 3, 4 at bounds 0.1, 0.5, 1, +Inf: one per second up to 0.1 s, two
// more up to 0.5 s, none up to 1 s, one above.
func TestHistogramAboveAndTop(t *testing.T) {
	nan := math.NaN()
	h := &Histogram{Uppers: []float64{0.1, 0.5, 1, math.Inf(1)}, Rates: [][]float64{{1, 0, nan}, {3, 0, nan}, {3, 0, nan}, {4, 0, nan}}}
	cases := []struct {
		bound, above float64
	}{
		{0.05, 4}, // no bound at or below: every observation
		{0.1, 3},
		{0.3, 3}, // the bucket (0.1, 0.5] may hold some above 0.3: counted
		{0.5, 1},
		{1, 1},
		{5, 1},
	}
	for _, c := range cases {
		if got := h.Above(c.bound, 0); got != c.above {
			t.Errorf("above %g: %g, want %g", c.bound, got, c.above)
		}
	}
	if got := h.Top(0); !math.IsInf(got, 1) {
		t.Errorf("top %g, want +Inf (an observation above 1 s)", got)
	}
	h.Rates[3][0] = 3
	if got := h.Top(0); got != 0.5 {
		t.Errorf("top %g, want 0.5 (nothing between 0.5 and +Inf)", got)
	}
	if got, top := h.Above(0.1, 1), h.Top(1); got != 0 || top != 0 {
		t.Errorf("a step without observations: above %g, top %g; want 0 and 0", got, top)
	}
	if got := h.Above(0.1, 2); !math.IsNaN(got) {
		t.Errorf("a step without samples: above %g, want NaN", got)
	}
}

func TestStampWritesRFC3339InUTC(t *testing.T) {
	for _, c := range []struct {
		name string
		t    time.Time
		want string
	}{
		{"a UTC time", time.Date(2026, 8, 8, 10, 0, 0, 0, time.UTC), "2026-08-08T10:00:00Z"},
		{"another zone's time, in UTC", time.Date(2026, 8, 8, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600)), "2026-08-08T10:00:00Z"},
		{"without its fraction of a second", time.Date(2026, 8, 8, 10, 0, 0, 400e6, time.UTC), "2026-08-08T10:00:00Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Stamp(c.t); got != c.want {
				t.Errorf("Stamp(%s) = %s, want %s", c.t, got, c.want)
			}
		})
	}
}
