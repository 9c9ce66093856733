package signals

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMatchersReturnsTheParsersMatchers(t *testing.T) {
	for _, c := range []struct {
		selector string
		want     []string
	}{
		{"", nil},
		{"   ", nil},
		{`{job="vllm"}`, []string{`job="vllm"`}},
		{`job="vllm"`, []string{`job="vllm"`}},
		{`{job="vllm", namespace=~"inference-.*", pod!="x", env!~"dev|test"}`,
			[]string{`job="vllm"`, `namespace=~"inference-.*"`, `pod!="x"`, `env!~"dev|test"`}},
		{`{job='vllm'}`, []string{`job="vllm"`}},
	} {
		t.Run(c.selector, func(t *testing.T) {
			got, err := ParseMatchers(c.selector)
			if err != nil {
				t.Fatal(err)
			}
			var printed []string
			for _, m := range got {
				printed = append(printed, m.String())
			}
			if !slices.Equal(printed, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseMatchersRejectsWhatIsNotASelector(t *testing.T) {
	for _, c := range []struct {
		selector string
		says     string
	}{
		{`{job=}`, "not a valid PromQL selector"},
		{`{job="vllm"`, "not a valid PromQL selector"},
		{`job=~"(unclosed"`, "not a valid PromQL selector"},
		{`up{job="vllm"}`, "not a valid PromQL selector"},
		{`{__name__="vllm:num_requests_running"}`, "must not select a metric name"},
	} {
		t.Run(c.selector, func(t *testing.T) {
			_, err := ParseMatchers(c.selector)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}

func TestWindowHoldsFourScrapesAndAtLeastOneStep(t *testing.T) {
	for _, c := range []struct {
		scrape, step, want time.Duration
	}{
		{15 * time.Second, 15 * time.Second, time.Minute},
		{15 * time.Second, 30 * time.Second, time.Minute},
		{15 * time.Second, time.Minute, time.Minute},
		{15 * time.Second, 5 * time.Minute, 5 * time.Minute},
		{30 * time.Second, 15 * time.Second, 2 * time.Minute},
		{time.Minute, 90 * time.Second, 4 * time.Minute},
		{15 * time.Second, 61500 * time.Millisecond, 62 * time.Second},
	} {
		if got := Window(c.scrape, c.step); got != c.want {
			t.Errorf("Window(scrape %s, step %s) = %s, want %s", c.scrape, c.step, got, c.want)
		}
	}
}

func TestBucketQuantileIsPrometheusesWithTheBucketThatHoldsIt(t *testing.T) {
	inf := math.Inf(1)
	// vLLM's TTFT layout around 0.25 s, and the same scrape with the buckets between 0.5 and 5
	// dropped by relabelling.
	full := []bucket{{0.1, 0}, {0.25, 50}, {0.5, 90}, {0.75, 97}, {1, 98}, {2.5, 99.5}, {5, 100}, {inf, 100}}
	thinned := []bucket{{0.1, 0}, {0.25, 50}, {0.5, 90}, {5, 100}, {inf, 100}}
	for _, c := range []struct {
		name                string
		q                   float64
		buckets             []bucket
		value, lower, upper float64
	}{
		{"median on a bound closes that bucket", 0.5, full, 0.25, 0.1, 0.25},
		{"p99 interpolated inside its bucket", 0.99, full, 1 + 1.5*(1.0/1.5), 1, 2.5},
		{"p99 with thinned buckets: the instance's own wide bucket", 0.99, thinned, 0.5 + 4.5*(9.0/10), 0.5, 5},
		{"first bucket starts at zero", 0.2, []bucket{{1, 10}, {inf, 10}}, 0.2, 0, 1},
		{"in the +Inf bucket: the top finite bound, unbounded above", 0.99, []bucket{{1, 50}, {inf, 100}}, 1, 1, inf},
		{"non-monotonic counts are made monotonic", 0.5, []bucket{{1, 10}, {2, 8}, {4, 20}, {inf, 20}}, 1 + 2*(0.0/10), 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs := append([]bucket(nil), c.buckets...)
			v, lo, up := bucketQuantile(c.q, bs)
			if math.Abs(v-c.value) > 1e-12 || lo != c.lower || up != c.upper {
				t.Errorf("bucketQuantile(%g) = %g in (%g, %g], want %g in (%g, %g]", c.q, v, lo, up, c.value, c.lower, c.upper)
			}
		})
	}
	for _, c := range []struct {
		name    string
		buckets []bucket
	}{
		{"no observations", []bucket{{1, 0}, {inf, 0}}},
		{"no +Inf bucket", []bucket{{1, 5}, {2, 10}}},
		{"only the +Inf bucket", []bucket{{inf, 10}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if v, lo, up := bucketQuantile(0.5, c.buckets); !math.IsNaN(v) || !math.IsNaN(lo) || !math.IsNaN(up) {
				t.Errorf("got %g in (%g, %g], want no value", v, lo, up)
			}
		})
	}
}

func TestSpansCoverTheGridOnceWithinPrometheusesLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name             string
		end              time.Duration
		step, window     time.Duration
		coarseBefore     time.Duration // from t0; 0: none
		wantCoarsePoints int
	}{
		{"short range, one query", 2 * time.Hour, 15 * time.Second, time.Minute, 0, 0},
		{"past 11,000 points: split", 72 * time.Hour, 15 * time.Second, time.Minute, 0, 0},
		{"baseline hour at the window's resolution", 3 * time.Hour, 15 * time.Second, time.Minute, time.Hour, 60},
		{"baseline not on the coarse grid", 3 * time.Hour, 15 * time.Second, time.Minute, time.Hour + 20*time.Second, 61},
		{"step as long as the window: nothing coarser", 3 * time.Hour, time.Minute, time.Minute, time.Hour, 0},
		{"coarse part reaching past the end", 30 * time.Minute, 15 * time.Second, time.Minute, time.Hour, 31},
	} {
		t.Run(c.name, func(t *testing.T) {
			end := t0.Add(c.end)
			var cb time.Time
			if c.coarseBefore > 0 {
				cb = t0.Add(c.coarseBefore)
			}
			spans := spansOf(t0, end, c.step, cb, c.window)
			covered := map[time.Time]int{}
			coarse := 0
			for _, sp := range spans {
				if n := int(sp.End.Sub(sp.Start)/sp.Step) + 1; n > MaxPoints {
					t.Fatalf("span of %d points", n)
				}
				for at := sp.Start; !at.After(sp.End); at = at.Add(sp.Step) {
					if sp.holdSteps > 1 {
						coarse++
					}
					for j := 0; j < sp.holdSteps; j++ {
						if h := at.Add(time.Duration(j) * c.step); sp.holdSteps == 1 || (h.Before(sp.before) && !h.After(end)) {
							covered[h]++
						}
					}
				}
			}
			for at := t0; !at.After(end); at = at.Add(c.step) {
				if covered[at] != 1 {
					t.Fatalf("grid point %s covered %d times", at.Format(time.TimeOnly), covered[at])
				}
			}
			if len(covered) != int(c.end/c.step)+1 {
				t.Errorf("%d points covered, want %d", len(covered), int(c.end/c.step)+1)
			}
			if coarse != c.wantCoarsePoints {
				t.Errorf("%d coarse points, want %d", coarse, c.wantCoarsePoints)
			}
		})
	}
}

func TestDetectionCovers(t *testing.T) {
	at := time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC)
	live := detected{from: at.Add(-time.Hour), to: at, at: at}
	past := detected{from: at.Add(-48 * time.Hour), to: at.Add(-47 * time.Hour), at: at}
	all := detected{at: at}
	for _, c := range []struct {
		name          string
		e             detected
		from, to, now time.Time
		want          bool
	}{
		{"a young detection answers for its window", live, live.from, live.to, at.Add(time.Minute), true},
		{"an old one does not", live, live.from, live.to, at.Add(DetectionTTL), false},
		{"nor for a window starting before its own", live, live.from.Add(-time.Second), live.to, at, false},
		{"nor for a window without a start", live, time.Time{}, live.to, at, false},
		{"a window reaching its time answers until DetectionTTL after it", live, live.from, at.Add(4 * time.Minute), at.Add(4 * time.Minute), true},
		{"a past window answers for no later end", past, past.from, past.to.Add(time.Second), at, false},
		{"an unbounded one answers for any window", all, time.Time{}, at.Add(time.Minute), at.Add(time.Minute), true},
		{"no detection answers for nothing", detected{}, live.from, live.to, at, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.e.covers(c.from, c.to, c.now); got != c.want {
				t.Errorf("covers(%s, %s) at %s = %v, want %v", c.from, c.to, c.now, got, c.want)
			}
		})
	}
}
