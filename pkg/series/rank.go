package series

import (
	"math"
	"slices"
	"sort"
)

// Worst returns the keys that have a series of sig, worst first: by the series' mean over the
// grid, highest first, or lowest first when lowerIsWorse (a hit or acceptance rate). A series
// without a value ranks last; ties keep the order of Keys.
func (s *Set) Worst(sig Signal, lowerIsWorse bool) []Key {
	type ranked struct {
		key  Key
		mean float64
	}
	var rs []ranked
	for _, k := range s.Keys() {
		if x := s.Get(k, sig); x != nil {
			rs = append(rs, ranked{k, mean(x.Values)})
		}
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i].mean, rs[j].mean
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			return !math.IsNaN(a) && math.IsNaN(b)
		case lowerIsWorse:
			return a < b
		}
		return a > b
	})
	out := make([]Key, len(rs))
	for i, r := range rs {
		out[i] = r.key
	}
	return out
}

// Median is sig's median across every key at each point of the grid; NaN where no key has a
// value.
func (s *Set) Median(sig Signal) []float64 {
	var all []*Series
	for _, k := range s.Keys() {
		if x := s.Get(k, sig); x != nil {
			all = append(all, x)
		}
	}
	out := NaNs(s.Grid.Len)
	at := make([]float64, 0, len(all))
	for i := range out {
		at = at[:0]
		for _, x := range all {
			if i < len(x.Values) && !math.IsNaN(x.Values[i]) {
				at = append(at, x.Values[i])
			}
		}
		if n := len(at); n > 0 {
			slices.Sort(at)
			out[i] = (at[(n-1)/2] + at[n/2]) / 2
		}
	}
	return out
}

// mean is the mean of the values that are not NaN; NaN when none is.
func mean(vs []float64) float64 {
	sum, n := 0.0, 0
	for _, v := range vs {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
