package signals

import (
	"math"
	"sort"
	"strconv"

	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/series"
)

// bucket is one cumulative histogram bucket: the rate of observations at or below upper.
type bucket struct {
	upper, count float64
}

// smallDeltaTolerance is Prometheus's: bucket counts this close are equal, so that rounding in
// rate() does not make a histogram look non-monotonic.
const smallDeltaTolerance = 1e-12

// bucketQuantile is Prometheus's histogram_quantile over cumulative buckets sorted by upper
// bound, and the bucket (lower, upper] that holds the quantile. The interval is certain from
// the counts: whatever the observations inside a bucket, the q-quantile lies in the bucket
// where the cumulative count first reaches q × total. The buckets are modified in place.
func bucketQuantile(q float64, bs []bucket) (v, lower, upper float64) {
	nan := math.NaN()
	if len(bs) < 2 || !math.IsInf(bs[len(bs)-1].upper, 1) {
		return nan, nan, nan
	}
	ensureMonotonic(bs)
	total := bs[len(bs)-1].count
	if total == 0 || math.IsNaN(total) {
		return nan, nan, nan
	}
	rank := q * total
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].count >= rank })
	if b == len(bs)-1 {
		// In the +Inf bucket: Prometheus answers the top finite bound.
		return bs[len(bs)-2].upper, bs[len(bs)-2].upper, math.Inf(1)
	}
	if b == 0 && bs[0].upper <= 0 {
		return bs[0].upper, math.Inf(-1), bs[0].upper
	}
	start, end, count := 0.0, bs[b].upper, bs[b].count
	if b > 0 {
		start = bs[b-1].upper
		count -= bs[b-1].count
		rank -= bs[b-1].count
	}
	return start + (end-start)*(rank/count), start, end
}

// ensureMonotonic is Prometheus's ensureMonotonicAndIgnoreSmallDeltas.
func ensureMonotonic(bs []bucket) {
	prev := bs[0].count
	for i := 1; i < len(bs); i++ {
		curr := bs[i].count
		if curr == prev {
			continue
		}
		if almostEqual(prev, curr, smallDeltaTolerance) || curr < prev {
			bs[i].count = prev
			continue
		}
		prev = curr
	}
}

// almostEqual is Prometheus's util/almost.Equal.
func almostEqual(a, b, epsilon float64) bool {
	const minNormal = 2.2250738585072014e-308
	if math.IsNaN(a) && math.IsNaN(b) || a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// histograms groups a matrix of sum by (instance, model, le) (rate(..._bucket[w])) per key.
// Each key keeps its own bounds, so instances scraped with different bucket layouts (or with
// some buckets dropped by relabelling) are each read as they are.
func histograms(m model.Matrix, l Labels, g series.Grid) map[series.Key]*series.Histogram {
	byBound := map[series.Key]map[float64][]float64{}
	for _, stream := range m {
		le, err := strconv.ParseFloat(string(stream.Metric[model.BucketLabel]), 64)
		if err != nil {
			continue
		}
		key := series.Key{Instance: string(stream.Metric[model.LabelName(l.Instance)]), Model: string(stream.Metric[model.LabelName(l.Model)])}
		rows := byBound[key]
		if rows == nil {
			rows = map[float64][]float64{}
			byBound[key] = rows
		}
		row := rows[le]
		if row == nil {
			row = series.NaNs(g.Len)
			rows[le] = row
		}
		for _, p := range stream.Values {
			i, ok := g.Index(p.Timestamp.Time())
			if !ok {
				continue
			}
			// Two spellings of one bound ("1" and "1.0") are one bucket, as Prometheus coalesces them.
			if math.IsNaN(row[i]) {
				row[i] = float64(p.Value)
			} else {
				row[i] += float64(p.Value)
			}
		}
	}
	out := make(map[series.Key]*series.Histogram, len(byBound))
	for key, rows := range byBound {
		h := &series.Histogram{}
		for le := range rows {
			h.Uppers = append(h.Uppers, le)
		}
		sort.Float64s(h.Uppers)
		for _, le := range h.Uppers {
			h.Rates = append(h.Rates, rows[le])
		}
		out[key] = h
	}
	return out
}

// fillQuantile fills a quantile series from a histogram: the value histogram_quantile would
// answer at each step, and the bucket that holds it.
func fillQuantile(h *series.Histogram, q float64, s *series.Series) {
	s.Lower, s.Upper = series.NaNs(len(s.Values)), series.NaNs(len(s.Values))
	bs := make([]bucket, 0, len(h.Uppers))
	for i := range s.Values {
		bs = bs[:0]
		for j, up := range h.Uppers {
			if c := h.Rates[j][i]; !math.IsNaN(c) {
				bs = append(bs, bucket{upper: up, count: c})
			}
		}
		if len(bs) == 0 {
			continue
		}
		s.Values[i], s.Lower[i], s.Upper[i] = bucketQuantile(q, bs)
	}
}
