package correlate

import (
	"math"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

func TestCoverageByInstanceCountsEachInstanceApart(t *testing.T) {
	const rate = 2.0
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.RequestRate: func(int) float64 { return rate }},
		keyB: {series.RequestRate: func(int) float64 { return rate }},
	})
	from, to := at(20), at(60)
	var reqs []traces.Request
	for i := range 12 {
		reqs = append(reqs, request(keyA, at(20+i), at(21+i)))
	}
	by := CoverageByInstance(Input{Requests: reqs, Set: set, From: from, To: to})
	want := rate * to.Sub(from).Seconds()
	if a := by[keyA.Instance]; a.Spans != 12 || a.Finished != want {
		t.Errorf("%s: %d of %v, want 12 of %v", keyA.Instance, a.Spans, a.Finished, want)
	}
	if b := by[keyB.Instance]; b.Spans != 0 || b.Finished != want {
		t.Errorf("%s: %d of %v, want 0 of %v (an instance without spans is counted too)", keyB.Instance, b.Spans, b.Finished, want)
	}
}

func TestTypicalTTFTAndStandout(t *testing.T) {
	// keyA's TTFT p50 is 0.1 s for most of the range and 5 s for a short stretch: its typical
	// TTFT is the median, 0.1 s.
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.TTFTP50: func(i int) float64 {
			if i >= 30 && i < 35 {
				return 5
			}
			return 0.1
		}},
	})
	typical := TypicalTTFT(set, at(0), at(79))
	if got := typical[keyA.Instance]; math.Abs(got-0.1) > 1e-9 {
		t.Fatalf("typical TTFT %v, want 0.1", got)
	}
	if _, ok := typical[keyB.Instance]; ok {
		t.Fatalf("an instance without TTFT p50 has a typical TTFT")
	}
	cases := []struct {
		name     string
		key      series.Key
		ttft     float64
		standout float64
		flagged  bool
	}{
		{"ordinary", keyA, 0.12, 1.2, false},
		{"above the factor", keyA, 0.5, 5, true},
		{"just under the factor", keyA, 0.29, 2.9, false},
		{"far above", keyA, 4, 40, true},
		{"instance without a typical TTFT", keyB, 4, math.NaN(), false},
	}
	var reqs []traces.Request
	for i, c := range cases {
		r := request(c.key, at(10+i), at(11+i))
		r.TTFT = c.ttft
		r.Present.Add(traces.FieldTTFT)
		reqs = append(reqs, r)
	}
	res := Join(Input{Requests: reqs, Set: set, From: at(0), To: at(79), Typical: typical}, Options{})
	for i, c := range cases {
		row := res.Rows[i]
		flagged := false
		for _, r := range row.Reasons {
			flagged = flagged || r.Code == TTFTAboveTypical
		}
		if !(math.Abs(row.Standout-c.standout) < 1e-9 || (math.IsNaN(row.Standout) && math.IsNaN(c.standout))) || flagged != c.flagged {
			t.Errorf("%s: standout %v, flagged %v; want %v, %v", c.name, row.Standout, flagged, c.standout, c.flagged)
		}
	}
	Rank(res.Rows)
	if res.Rows[0].TTFT != 4 || res.Rows[0].Instance != keyA.Instance || !math.IsNaN(res.Rows[len(res.Rows)-1].Standout) {
		t.Errorf("rank: first %v of %s, last standout %v; want the furthest first and the unknown last", res.Rows[0].TTFT, res.Rows[0].Instance, res.Rows[len(res.Rows)-1].Standout)
	}
}
