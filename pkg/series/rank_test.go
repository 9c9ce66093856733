package series

import (
	"math"
	"slices"
	"strconv"
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

// BenchmarkTopKOfAFleet ranks and takes the median of one signal of 500 instances over two
// hours at a 15 s step, what a graph's topK query costs beyond its fetch.
func BenchmarkTopKOfAFleet(b *testing.B) {
	const instances, points = 500, 480
	s := NewSet(Grid{Start: time.Unix(0, 0), Step: 15 * time.Second, Len: points})
	for i := range instances {
		x := NewSeries(KVUsage, Key{Instance: strconv.Itoa(i)}, points)
		for j := range x.Values {
			x.Values[j] = float64((i*31+j*7)%100) / 100
		}
		s.Put(x)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Worst(KVUsage, false)[:5]
		_ = s.Median(KVUsage)
	}
}
