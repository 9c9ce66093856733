package signals

import (
	"math"
	"sort"
)

// bucketOf returns the histogram bucket (lower, upper] that holds an interpolated quantile v,
// given the finite bucket bounds. histogram_quantile returns the highest finite bound when the
// quantile falls in the +Inf bucket, so that value's upper bound is +Inf.
func bucketOf(v float64, bounds []float64) (lower, upper float64) {
	if math.IsNaN(v) || len(bounds) == 0 {
		return math.NaN(), math.NaN()
	}
	tol := 1e-12 * math.Max(1, math.Abs(v))
	i := sort.SearchFloat64s(bounds, v-tol)
	switch {
	case i >= len(bounds):
		return bounds[len(bounds)-1], math.Inf(1)
	case i == len(bounds)-1 && v >= bounds[i]-tol:
		// On the top finite bound: the last finite bucket's top, or the +Inf bucket.
		prev := 0.0
		if i > 0 {
			prev = bounds[i-1]
		}
		return prev, math.Inf(1)
	case i == 0:
		return 0, bounds[0]
	default:
		return bounds[i-1], bounds[i]
	}
}
