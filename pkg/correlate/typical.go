package correlate

import (
	"math"
	"slices"
	"time"

	"github.com/seed/vllm-datasource/pkg/internal/option"
	"github.com/seed/vllm-datasource/pkg/series"
)

// TypicalTTFT is, per instance, the median over [from, to] of the metrics' TTFT p50: what a
// request of that instance usually waits for its first token over the whole range, from the
// histograms of every request rather than from the sampled spans. Instances without a TTFT
// p50 sample in the range are absent. With several models on one instance, the largest of
// their medians is kept, so that a slower model's ordinary requests do not stand out.
func TypicalTTFT(set *series.Set, from, to time.Time) map[string]float64 {
	out := map[string]float64{}
	if set == nil {
		return out
	}
	g := set.Grid
	for _, k := range set.Keys() {
		s := set.Get(k, series.TTFTP50)
		if s == nil {
			continue
		}
		var vals []float64
		for i, v := range s.Values {
			if t := g.Time(i); math.IsNaN(v) || v <= 0 || t.Before(from) || t.After(to) {
				continue
			}
			vals = append(vals, v)
		}
		if len(vals) == 0 {
			continue
		}
		m := median(vals)
		if prev, ok := out[k.Instance]; !ok || m > prev {
			out[k.Instance] = m
		}
	}
	return out
}

// DefaultStandoutFactor is how many times its instance's typical TTFT a request's TTFT must
// be to stand out over the range (reason ttft_above_typical, and the search threshold).
const DefaultStandoutFactor = 3

// Thresholds are the TTFTs, per instance, above which a request stands out: factor times the
// typical TTFT (DefaultStandoutFactor when factor ≤ 0). The requests plan searches for the
// requests above them (plan.RequestMetrics).
func Thresholds(typical map[string]float64, factor float64) map[string]float64 {
	factor = option.PositiveOr(factor, DefaultStandoutFactor)
	out := make(map[string]float64, len(typical))
	for in, v := range typical {
		out[in] = factor * v
	}
	return out
}

// Rank orders rows by how far each stands from its instance's typical TTFT (Row.Standout),
// the furthest first; rows without a standout follow, newest first.
func Rank(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		an, bn := math.IsNaN(a.Standout), math.IsNaN(b.Standout)
		switch {
		case an && bn:
			return b.Start.Compare(a.Start)
		case an:
			return 1
		case bn:
			return -1
		case a.Standout != b.Standout:
			if a.Standout > b.Standout {
				return -1
			}
			return 1
		}
		return b.Start.Compare(a.Start)
	})
}
