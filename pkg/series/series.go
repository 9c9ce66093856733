// Package series holds the aligned time series that the signals package produces and the
// domain packages (diagnosis, correlate) consume: values of named signals per vLLM instance and
// model on one regular time grid. It has no I/O. It is also the one home of what those
// packages share: the NaN fill of a series (NaNs), the number formatting of their texts with one
// wording for a missing value (Format, Missing), the request minimum for a quantile or a
// window statistic (MinRequests), and the signals a request is joined with (Joined), which the
// plans fetch, the join reads and the frames show. A query may also keep histogram families
// whole (Histogram: bucket rates per step), as the requests plan does to find the slowest
// requests.
package series

import (
	"math"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Key identifies one vLLM server process and the model it serves.
type Key struct {
	Instance string
	Model    string
}

// Grid is a regular time axis: Len points from Start, Step apart (Prometheus range-query
// timestamps fall exactly on it).
type Grid struct {
	Start time.Time
	Step  time.Duration
	Len   int
}

// NewGrid returns the grid Prometheus uses for a range query from start to end.
func NewGrid(start, end time.Time, step time.Duration) Grid {
	if step <= 0 || end.Before(start) {
		return Grid{Start: start, Step: step}
	}
	return Grid{Start: start, Step: step, Len: int(end.Sub(start)/step) + 1}
}

// Time returns the time of point i.
func (g Grid) Time(i int) time.Time { return g.Start.Add(time.Duration(i) * g.Step) }

// End returns the time of the last point.
func (g Grid) End() time.Time { return g.Time(g.Len - 1) }

// Index returns the point at t, or the last point before it; ok is false when t is before the
// grid's start.
func (g Grid) Index(t time.Time) (i int, ok bool) {
	if t.Before(g.Start) || g.Len == 0 {
		return 0, false
	}
	i = int(t.Sub(g.Start) / g.Step)
	if i >= g.Len {
		i = g.Len - 1
	}
	return i, true
}

// Series is one signal of one key on the grid; NaN marks a step without a sample. Quantile
// signals also carry Lower and Upper: the histogram bucket that holds the quantile, since
// vLLM's coarse buckets make the interpolated value uncertain by up to a factor of 2.5.
type Series struct {
	Signal Signal
	Key    Key
	Values []float64
	Lower  []float64
	Upper  []float64
}

// NewSeries returns a series of n NaN values.
func NewSeries(signal Signal, key Key, n int) *Series {
	return &Series{Signal: signal, Key: key, Values: NaNs(n)}
}

// HasBounds reports whether the series carries quantile bucket intervals.
func (s *Series) HasBounds() bool {
	return len(s.Lower) == len(s.Values) && len(s.Upper) == len(s.Values)
}

// Set is the aligned signals of one query: every series on one grid, the signals that could
// not be had and why, the KV-cache configuration of each instance, and the histogram families
// kept whole when a query asked for them.
type Set struct {
	Grid   Grid
	series map[Key]map[Signal]*Series
	// Absent maps a signal with no series to the reason, for notices and "not applicable".
	Absent map[Signal]string
	// CacheConfig maps an instance to its vllm:cache_config_info facts.
	CacheConfig map[string]vllm.CacheConfig
	hists       map[string]map[Key]*Histogram
}

// NewSet returns an empty set on a grid.
func NewSet(g Grid) *Set {
	return &Set{Grid: g, series: map[Key]map[Signal]*Series{}, Absent: map[Signal]string{}, CacheConfig: map[string]vllm.CacheConfig{},
		hists: map[string]map[Key]*Histogram{}}
}

// PutHistogram adds or replaces a key's histogram of a metric family (such as
// vllm:time_to_first_token_seconds).
func (s *Set) PutHistogram(family string, k Key, h *Histogram) {
	m := s.hists[family]
	if m == nil {
		m = map[Key]*Histogram{}
		s.hists[family] = m
	}
	m[k] = h
}

// Histogram returns a key's histogram of a metric family, or nil.
func (s *Set) Histogram(family string, k Key) *Histogram { return s.hists[family][k] }

// HistogramKeys returns the keys with a histogram of a metric family, sorted as Keys.
func (s *Set) HistogramKeys(family string) []Key {
	return sortedKeys(s.hists[family])
}

// Put adds or replaces a series.
func (s *Set) Put(x *Series) {
	m := s.series[x.Key]
	if m == nil {
		m = map[Signal]*Series{}
		s.series[x.Key] = m
	}
	m[x.Signal] = x
}

// Get returns the series of a signal for a key, or nil.
func (s *Set) Get(k Key, sig Signal) *Series { return s.series[k][sig] }

// Keys returns every key with at least one series, sorted by instance then model.
func (s *Set) Keys() []Key { return sortedKeys(s.series) }

func sortedKeys[V any](m map[Key]V) []Key {
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Instance != keys[j].Instance {
			return keys[i].Instance < keys[j].Instance
		}
		return keys[i].Model < keys[j].Model
	})
	return keys
}

// Value returns a signal's value at point i, NaN when absent.
func (s *Set) Value(k Key, sig Signal, i int) float64 {
	x := s.Get(k, sig)
	if x == nil || i < 0 || i >= len(x.Values) {
		return math.NaN()
	}
	return x.Values[i]
}
