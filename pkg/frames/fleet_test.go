package frames

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

func TestFleetIsOneLinePerInstanceWorstFirst(t *testing.T) {
	res := fleetDiagnosed(t, 3)
	set := series.NewSet(res.Grid)
	frame := Fleet(res, set, nil, nil)
	if rows, _ := frame.RowLen(); rows != 3 {
		t.Fatalf("%d rows, want one per instance", rows)
	}
	col := func(name string, row int) any {
		f, _ := frame.FieldByName(name)
		if f == nil {
			t.Fatalf("no field %s", name)
		}
		return f.At(row)
	}
	if col("instance", 0) != "vllm-000:8000" || col("severity", 0) != string(diagnosis.Critical) ||
		col("rule", 0) != diagnosis.KVCacheSaturated || col("active", 0) != true {
		t.Errorf("first line %v %v %v", col("instance", 0), col("severity", 0), col("rule", 0))
	}
	for row := 1; row < 3; row++ {
		if col("finding", row) != Healthy || col("severity", row) != "ok" || col("since", row).(*time.Time) != nil {
			t.Errorf("line %d: %v %v", row, col("finding", row), col("severity", row))
		}
	}
	if _, err := json.Marshal(frame); err != nil {
		t.Fatal(err)
	}
}

func TestFleetNumbersAreTheWorstOverTheEvaluatedRange(t *testing.T) {
	key := series.Key{Instance: "a:8000", Model: "m"}
	set := series.NewSet(series.Grid{Start: start, Step: 15 * time.Second, Len: 6})
	put := func(sig series.Signal, vs ...float64) {
		s := series.NewSeries(sig, key, len(vs))
		copy(s.Values, vs)
		set.Put(s)
	}
	nan := math.NaN()
	// The first two steps feed the lookback only: their extremes must not count.
	put(series.KVUsage, 0.99, 0.99, 0.5, 0.7, nan, 0.6)
	put(series.PrefixCacheHitRate, 0.01, 0.01, 0.8, 0.4, 0.9, nan)
	res := diagnosis.Result{Grid: series.Grid{Start: set.Grid.Time(2), Step: set.Grid.Step, Len: 4},
		Timelines: []diagnosis.Timeline{{Key: key}}}
	frame := Fleet(res, set, nil, nil)
	num := func(name string) *float64 {
		f, _ := frame.FieldByName(name)
		return f.At(0).(*float64)
	}
	if v := num("kv_usage"); v == nil || *v != 0.7 {
		t.Errorf("kv_usage %v, want 0.7", v)
	}
	if v := num("prefix_cache_hit_rate"); v == nil || *v != 0.4 {
		t.Errorf("hit rate %v, want 0.4", v)
	}
	if v := num("spec_acceptance_rate"); v != nil {
		t.Errorf("acceptance %v without a series, want null", *v)
	}
}

// With objectives, each line names the objective its instance is closest to breaking, with its
// attainment and budget left; a line without one is null; without objectives, no such column.
func TestFleetNamesTheWorstObjective(t *testing.T) {
	res := fleetDiagnosed(t, 3)
	set := series.NewSet(res.Grid)
	worst := map[series.Key]slo.Row{res.Timelines[1].Key: {Objective: slo.Objective{Name: "ttft-1s"},
		Status: slo.Status{Attainment: slo.Interval{Low: 0.97, High: 0.98}, Budget: slo.Interval{Low: -0.5, High: -0.2}}}}
	frame := Fleet(res, set, worst, []string{"the objectives' budget could not be read"})
	name, _ := frame.FieldByName("slo")
	attainment, _ := frame.FieldByName("slo_attainment")
	budget, _ := frame.FieldByName("slo_budget_left")
	instance, _ := frame.FieldByName("instance")
	if name == nil || attainment == nil || budget == nil {
		t.Fatal("no objective columns")
	}
	for i := range frame.Rows() {
		if instance.At(i) != res.Timelines[1].Key.Instance {
			if name.At(i) != "" || attainment.At(i).(*float64) != nil {
				t.Errorf("line %d without an objective: %v %v", i, name.At(i), attainment.At(i))
			}
			continue
		}
		if name.At(i) != "ttft-1s" || *attainment.At(i).(*float64) != 0.97 || *budget.At(i).(*float64) != -0.5 {
			t.Errorf("line %d: %v %v %v, want ttft-1s at least 0.97 and -0.5", i, name.At(i), *attainment.At(i).(*float64), *budget.At(i).(*float64))
		}
	}
	if n := frame.Meta.Notices; len(n) == 0 || n[len(n)-1].Text != "the objectives' budget could not be read" {
		t.Errorf("notices %v, want the objectives' notice", n)
	}
	if f, _ := Fleet(res, set, nil, nil).FieldByName("slo"); f != nil {
		t.Error("an objective column without objectives")
	}
}
