package signals

import (
	"slices"
	"time"

	"github.com/prometheus/common/model"
)

// MaxPoints is Prometheus's limit on the points of one range query's series: longer ranges
// are split into range queries fetched in parallel.
const MaxPoints = 11000

// spansOf splits a grid into range queries: the points before coarseBefore at the largest
// multiple of the step that does not exceed the rate window (so that every sample still falls
// in some window and the PromQL, whose window follows the grid's step, is the same), the rest
// at the step; each part in pieces of at most MaxPoints points.
func spansOf(start, end time.Time, step time.Duration, coarseBefore time.Time, window time.Duration) []Range {
	var out []Range
	fine := start
	if k := int(window / step); k > 1 && coarseBefore.After(start) {
		coarse := time.Duration(k) * step
		n := (coarseBefore.Sub(start) + coarse - 1) / coarse
		fine = start.Add(n * coarse)
		last := fine.Add(-coarse)
		if fine.After(end) {
			fine, last = end.Add(step), end
		}
		out = append(out, split(Range{Start: start, End: last, Step: coarse, holdSteps: k, before: fine})...)
	}
	if !fine.After(end) {
		out = append(out, split(Range{Start: fine, End: end, Step: step, holdSteps: 1})...)
	}
	return out
}

func split(sp Range) []Range {
	var out []Range
	for from := sp.Start; !from.After(sp.End); from = from.Add(MaxPoints * sp.Step) {
		part := sp
		part.Start = from
		if to := from.Add((MaxPoints - 1) * sp.Step); to.Before(sp.End) {
			part.End = to
		}
		out = append(out, part)
	}
	return out
}

// hold copies each sample of a coarse span onto the grid steps it stands for.
func (sp Range) hold(m model.Matrix, step time.Duration) model.Matrix {
	if sp.holdSteps <= 1 {
		return m
	}
	for _, s := range m {
		vals := make([]model.SamplePair, 0, len(s.Values)*sp.holdSteps)
		for _, p := range s.Values {
			for j := range sp.holdSteps {
				t := p.Timestamp.Add(time.Duration(j) * step)
				if !t.Time().Before(sp.before) {
					break
				}
				vals = append(vals, model.SamplePair{Timestamp: t, Value: p.Value})
			}
		}
		s.Values = vals
	}
	return m
}

// appendNew appends the warnings not yet in list (each piece of a split range repeats them).
func appendNew(list []string, more ...string) []string {
	for _, w := range more {
		if !slices.Contains(list, w) {
			list = append(list, w)
		}
	}
	return list
}
