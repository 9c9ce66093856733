package series

import (
	"math"
	"slices"
	"testing"
	"time"
)

// rankSet holds one signal of four instances over three points: a (mean 1), b (mean 3),
// c (mean 2, one point missing) and d (no value at all).
func rankSet() *Set {
	s := NewSet(NewGrid(time.Unix(0, 0), time.Unix(30, 0), 15*time.Second))
	nan := math.NaN()
	for inst, vs := range map[string][]float64{
		"a": {1, 1, 1}, "b": {2, 3, 4}, "c": {nan, 1, 3}, "d": {nan, nan, nan},
	} {
		x := NewSeries(KVUsage, Key{Instance: inst}, 3)
		copy(x.Values, vs)
		s.Put(x)
	}
	return s
}

func TestWorstRanksByTheMeanInTheSignalsBadDirection(t *testing.T) {
	for _, tt := range []struct {
		lowerIsWorse bool
		want         []string
	}{
		{false, []string{"b", "c", "a", "d"}},
		{true, []string{"a", "c", "b", "d"}},
	} {
		var got []string
		for _, k := range rankSet().Worst(KVUsage, tt.lowerIsWorse) {
			got = append(got, k.Instance)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("lowerIsWorse %t: %v, want %v (no value last)", tt.lowerIsWorse, got, tt.want)
		}
	}
}

func TestMedianIsAcrossTheInstancesWithAValueAtEachPoint(t *testing.T) {
	got := rankSet().Median(KVUsage)
	want := []float64{1.5, 1, 3}
	if !slices.Equal(got, want) {
		t.Errorf("median %v, want %v", got, want)
	}
	if m := rankSet().Median(Running); !math.IsNaN(m[0]) {
		t.Errorf("median of a signal no instance has: %v, want NaN", m)
	}
}
