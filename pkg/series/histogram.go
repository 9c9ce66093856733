package series

import "math"

// Histogram is one key's histogram family on the grid, as Prometheus's bucket rates hold it:
// each bucket's upper bound, sorted (the last +Inf when the family has it), and the bucket's
// cumulative rate of observations per second over the rate window ending at each step (NaN
// where the bucket had no sample). Rates[j] belongs to Uppers[j].
type Histogram struct {
	Uppers []float64
	Rates  [][]float64
}

// minRate is the least bucket rate that counts as observations: rate() leaves rounding of
// about 1e-15 where two cumulative buckets hold the same requests, while one observation in a
// rate window of an hour is about 3e-4 per second.
const minRate = 1e-9

// Above returns, at step i, the rate of observations above the largest bucket bound at or
// below bound (all observations when no bound is): at least the rate of those above bound,
// and exactly it when bound is a bucket bound. NaN without a +Inf bucket or its sample.
func (h *Histogram) Above(bound float64, i int) float64 {
	n := len(h.Uppers)
	if n == 0 || !math.IsInf(h.Uppers[n-1], 1) || math.IsNaN(h.Rates[n-1][i]) {
		return math.NaN()
	}
	total, below := h.Rates[n-1][i], 0.0
	for j := 0; j < n-1 && h.Uppers[j] <= bound; j++ {
		if v := h.Rates[j][i]; !math.IsNaN(v) {
			below = v
		}
	}
	if d := total - below; d > minRate {
		return d
	}
	return 0
}

// Top returns, at step i, the upper bound of the highest bucket holding observations, which
// none of that step's exceeds (+Inf when the +Inf bucket holds some); 0 when there are none.
func (h *Histogram) Top(i int) float64 {
	for j := len(h.Uppers) - 1; j >= 0; j-- {
		v := h.Rates[j][i]
		if math.IsNaN(v) {
			continue
		}
		below := 0.0
		for k := j - 1; k >= 0; k-- {
			if b := h.Rates[k][i]; !math.IsNaN(b) {
				below = b
				break
			}
		}
		if v-below > minRate {
			return h.Uppers[j]
		}
	}
	return 0
}
