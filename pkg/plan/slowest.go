package plan

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// The searches of the slowest requests (slowestPlan).
const (
	// MaxSlowestSearches bounds the searches of the fleet's slowest requests in one query.
	MaxSlowestSearches = 4 * MaxWindows
	// SlowestLimit is the limit of each of them: the metrics size their sub-windows so that
	// none should reach it.
	SlowestLimit = traces.DefaultMaxLimit
)

// slowestHistograms are the histogram families the slowest requests are found from: the
// TTFT's says when requests above a TTFT began, the e2e's how many spans a search bounded by
// that TTFT matches (a backend that filters on the span's duration, as Jaeger's minDuration
// does, matches every request whose e2e reaches it, since e2e ≥ TTFT).
var slowestHistograms = []string{vllm.TimeToFirstToken, vllm.E2ELatency}

// slowestInstance is one instance's histograms, its models' together, and its threshold.
type slowestInstance struct {
	name      string
	threshold float64
	ttft, e2e []*series.Histogram
	// ttftTop and e2eTop are, per step, the highest bucket bound holding observations (0:
	// none); maxTTFT is the highest of ttftTop, above which no level has requests.
	ttftTop, e2eTop []float64
	maxTTFT         float64
}

// slowestPlan finds the fleet's slowest requests from the metrics, however many requests
// stand out and whatever the backend's limit keeps of a search. A request stands out by its
// TTFT over its instance's threshold (the ratio that ranks the rows), so the fleet's slowest
// are those above one level, the same multiple y of every instance's threshold. For a level,
// each instance's TTFT histogram says when requests above it began: each step's observations
// above it started between that step's rate window, less the highest bucket's bound, and the
// step, less the level. Those times are searched for the instance with the level as the least
// TTFT, in sub-windows small enough that none holds more than SlowestLimit of the spans such a
// search matches: the e2e histogram's requests above the level, spread over the same way,
// since Jaeger bounds the span's duration rather than its TTFT. Every request is counted as if
// it were traced, so a search should not reach its limit however the spans are sampled. The
// level is the lowest (from 1, the threshold itself) whose sub-windows number at most
// MaxSlowestSearches.
type slowestPlan struct {
	from, to  time.Time
	grid      series.Grid
	window    time.Duration
	instances []slowestInstance
}

// newSlowestPlan collects the histograms of the instances with a threshold; ok is false when
// none has its TTFT histogram.
func newSlowestPlan(set *series.Set, thresholds map[string]float64, instances []string, from, to time.Time, window time.Duration) (slowestPlan, bool) {
	if set == nil {
		return slowestPlan{}, false
	}
	p := slowestPlan{from: from, to: to, grid: set.Grid, window: window}
	byName := map[string]int{}
	for _, k := range set.HistogramKeys(vllm.TimeToFirstToken) {
		th, ok := thresholds[k.Instance]
		if !ok || th <= 0 || (instances != nil && !slices.Contains(instances, k.Instance)) {
			continue
		}
		ttft := set.Histogram(vllm.TimeToFirstToken, k)
		i, seen := byName[k.Instance]
		if !seen {
			i = len(p.instances)
			byName[k.Instance] = i
			p.instances = append(p.instances, slowestInstance{name: k.Instance, threshold: th})
		}
		in := &p.instances[i]
		in.ttft = append(in.ttft, ttft)
		if e2e := set.Histogram(vllm.E2ELatency, k); e2e != nil {
			in.e2e = append(in.e2e, e2e)
		}
	}
	for i := range p.instances {
		in := &p.instances[i]
		if len(in.e2e) == 0 {
			// Without the e2e histogram, the requests above the level are the spans counted.
			in.e2e = in.ttft
		}
		in.ttftTop, in.e2eTop = p.tops(in.ttft), p.tops(in.e2e)
		in.maxTTFT = slices.Max(append(in.ttftTop, 0))
	}
	return p, len(p.instances) > 0
}

// tops are, per step from the range's start, the highest bucket bound holding observations
// over histograms.
func (p slowestPlan) tops(hs []*series.Histogram) []float64 {
	out := make([]float64, p.grid.Len)
	first, _ := p.grid.Index(p.from)
	for i := first; i < len(out); i++ {
		for _, h := range hs {
			out[i] = math.Max(out[i], h.Top(i))
		}
	}
	return out
}

// searches returns the searches of the lowest affordable level, never below the query's least
// TTFT, and the level as a multiple of the thresholds: 1 when every instance's requests above
// its threshold are searched, +Inf when not even the highest level is affordable (no search).
func (p slowestPlan) searches(minTTFT float64) ([]traces.Query, float64) {
	levels := p.levels()
	i := sort.Search(len(levels), func(i int) bool { return p.count(levels[i]) <= MaxSlowestSearches })
	if i == len(levels) {
		return nil, math.Inf(1)
	}
	y := levels[i]
	var out []traces.Query
	for _, in := range p.instances {
		level := math.Max(y*in.threshold, minTTFT)
		for _, w := range p.windows(in, y*in.threshold) {
			out = append(out, traces.Query{From: w[0], To: w[1], Instances: []string{in.name}, MinTTFT: level, Limit: SlowestLimit})
		}
	}
	return out, y
}

// levels are the levels where the searches' count can change, lowest first: 1 and each
// bucket bound above an instance's threshold, as a multiple of it.
func (p slowestPlan) levels() []float64 {
	out := []float64{1}
	for _, in := range p.instances {
		for _, hs := range [][]*series.Histogram{in.ttft, in.e2e} {
			for _, h := range hs {
				for _, b := range h.Uppers {
					if y := b / in.threshold; y > 1 && !math.IsInf(y, 1) {
						out = append(out, y)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// count is the number of searches of level y.
func (p slowestPlan) count(y float64) int {
	n := 0
	for _, in := range p.instances {
		n += len(p.windows(in, y*in.threshold))
		if n > MaxSlowestSearches {
			break
		}
	}
	return n
}

// windows are the sub-windows searched for one instance's requests with a TTFT of at least
// level, on bins of one grid step over [from, to]: where its TTFT histogram shows such
// requests beginning, cut so that each holds at most SlowestLimit of the spans the search
// matches, a bin holding more split evenly.
func (p slowestPlan) windows(in slowestInstance, level float64) [][2]time.Time {
	step := p.grid.Step
	n := int(math.Ceil(float64(p.to.Sub(p.from)) / float64(step)))
	ttftFloor, e2eFloor := floorBound(in.ttft, level), floorBound(in.e2e, level)
	if n <= 0 || in.maxTTFT <= ttftFloor.Seconds() {
		return nil
	}
	slow := make([]bool, n)
	matches := make([]float64, n)
	// spread adds count over the starts in [a, b], uniformly, and marks their bins when mark.
	spread := func(a, b time.Time, count float64, mark bool) {
		if b.Before(p.from) || !a.Before(p.to) {
			return
		}
		a, b = maxTime(a, p.from), minTime(b, p.to.Add(-time.Nanosecond))
		first, last := int(a.Sub(p.from)/step), int(b.Sub(p.from)/step)
		span := b.Sub(a).Seconds()
		for i := first; i <= last; i++ {
			if mark {
				slow[i] = true
			}
			if count <= 0 {
				continue
			}
			if span <= 0 {
				matches[i] += count
				continue
			}
			lo, hi := maxTime(a, p.from.Add(time.Duration(i)*step)), minTime(b, p.from.Add(time.Duration(i+1)*step))
			matches[i] += count * hi.Sub(lo).Seconds() / span
		}
	}
	for i := range p.grid.Len {
		t := p.grid.Time(i)
		if t.Before(p.from) || in.ttftTop[i] <= ttftFloor.Seconds() && in.e2eTop[i] <= e2eFloor.Seconds() {
			continue
		}
		if rate := above(in.ttft, level, i); rate > 0 {
			spread(t.Add(-p.window-p.finite(in.ttftTop[i])), t.Add(-ttftFloor), 0, true)
		}
		if rate := above(in.e2e, level, i); rate > 0 {
			spread(t.Add(-p.window-p.finite(in.e2eTop[i])), t.Add(-e2eFloor), rate*step.Seconds(), false)
		}
	}
	var out [][2]time.Time
	var acc float64
	open := false
	at := func(i int) time.Time { return p.from.Add(time.Duration(i) * step) }
	for i := range n {
		if !slow[i] {
			open, acc = false, 0
			continue
		}
		if matches[i] > SlowestLimit {
			parts := int(math.Ceil(matches[i] / SlowestLimit))
			for k := range parts {
				out = append(out, [2]time.Time{at(i).Add(step * time.Duration(k) / time.Duration(parts)), at(i).Add(step * time.Duration(k+1) / time.Duration(parts))})
			}
			open, acc = false, 0
			continue
		}
		if !open || acc+matches[i] > SlowestLimit {
			out = append(out, [2]time.Time{at(i), at(i + 1)})
			open, acc = true, 0
		}
		out[len(out)-1][1] = at(i + 1)
		acc += matches[i]
	}
	if len(out) > 0 && out[len(out)-1][1].After(p.to) {
		out[len(out)-1][1] = p.to
	}
	return out
}

// above is the rate of observations above level at step i over an instance's histograms
// (each model's).
func above(hs []*series.Histogram, level float64, i int) float64 {
	rate := 0.0
	for _, h := range hs {
		if v := h.Above(level, i); v > 0 {
			rate += v
		}
	}
	return rate
}

// floorBound is the largest bucket bound at or below level of the histograms (0 when none):
// the observations counted above level are above it, so they began at least that long before
// they were counted.
func floorBound(hs []*series.Histogram, level float64) time.Duration {
	b := math.Inf(1)
	for _, h := range hs {
		lo := 0.0
		for _, u := range h.Uppers {
			if u <= level {
				lo = u
			}
		}
		b = math.Min(b, lo)
	}
	return time.Duration(b * float64(time.Second))
}

// finite is a highest bucket bound as a duration; the +Inf bucket's observations may have
// begun at any time since the range's start, which its grid's length bounds.
func (p slowestPlan) finite(top float64) time.Duration {
	if math.IsInf(top, 1) {
		return p.to.Sub(p.grid.Start)
	}
	return time.Duration(top * float64(time.Second))
}

// slowestNotice says which requests the searches of the slowest found in full, when not every
// request above its threshold could be searched.
func slowestNotice(y float64, searches int) string {
	if math.IsInf(y, 1) {
		return fmt.Sprintf("The requests above their instance's threshold are too many to search in full where the metrics show them (more than %d searches of %d): they are searched per sub-window, and the slowest may be missing.", MaxSlowestSearches, SlowestLimit)
	}
	return fmt.Sprintf("The slowest requests were searched where the metrics show them, in full from %.3g times their instance's threshold (%d search(es)): less slow ones are shown when other searches found them.", y, searches)
}
