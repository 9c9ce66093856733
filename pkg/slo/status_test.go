package slo

import (
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// TestStatusOfReadsEachWindowFromTheGridsEnd: a grid of hourly steps from 4 h to 9 h whose last
// step alone misses, after a grid of 2-hour steps to 4 h; the range is the last 2 steps, the
// objective's window the last 8 hours: 3 from the coarse grid (half of one of its steps).
func TestStatusOfReadsEachWindowFromTheGridsEnd(t *testing.T) {
	g := series.NewGrid(time.Unix(0, 0).Add(4*time.Hour), time.Unix(0, 0).Add(9*time.Hour), time.Hour)
	total, good := make([]float64, g.Len), make([]float64, g.Len)
	for i := range total {
		total[i], good[i] = 1, 1
	}
	good[g.Len-1] = 0.5
	e := FromCounts(total, good, time.Hour) // 3600 events a step
	o := Objective{Target: 0.9, Window: 8 * time.Hour}
	pg := series.NewGrid(time.Unix(0, 0), time.Unix(0, 0).Add(4*time.Hour), 2*time.Hour)
	past := FromCounts([]float64{1, 1, 1}, []float64{1, 1, 1}, 2*time.Hour) // 7200 events a step
	got := StatusOf(e, g, g.Len-2, past, pg, o)
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"range events", got.Range.Total, 2 * 3600},
		{"attainment over the range", got.Attainment.Low, 0.75},
		{"budget over 8 steps: 1800 misses of 2880 allowed", got.Budget.Low, 1 - 1800.0/2880},
		{"1 h burn: half missed over 0.1", got.Burn1h.High, 5},
		{"6 h burn: 1800 of 21600 missed over 0.1", got.Burn6h.High, 1800.0 / 21600 / 0.1},
	} {
		if !same(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}
