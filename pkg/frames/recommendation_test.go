package frames

import (
	"math"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

func TestRecommendationSeriesHoldTheValueDuringTheFinding(t *testing.T) {
	g := series.Grid{Start: start, Step: time.Minute, Len: 5}
	rec := diagnosis.Recommendation{Flag: "--max-num-seqs", Value: 43}
	res := diagnosis.Result{Grid: g,
		Alerts: []diagnosis.Alert{
			{Rule: diagnosis.SpecDecodeInefficient, Severity: diagnosis.Warning, Key: keySat, Values: make([]float64, 5)},
			{Rule: diagnosis.SpecDecodeInefficient, Severity: diagnosis.Critical, Key: keySat, Values: make([]float64, 5)},
			{Rule: diagnosis.KVCacheSaturated, Severity: diagnosis.Critical, Key: keySat, Values: make([]float64, 5)},
			{Rule: diagnosis.KVCacheSaturated, Severity: diagnosis.Critical, Key: keyCalm, Values: make([]float64, 5)},
		},
		Findings: []diagnosis.Finding{{Rule: diagnosis.KVCacheSaturated, Key: keySat, Start: g.Time(1), End: g.Time(3), Recommendation: rec}},
	}
	frames := RecommendationSeries(res)
	// One series per rule and key: the two severities of spec_decode_inefficient share one.
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3", len(frames))
	}
	kv := frames[1].Fields[1]
	if kv.Labels["rule"] != diagnosis.KVCacheSaturated || kv.Labels["instance"] != keySat.Instance || kv.Labels["severity"] != "" {
		t.Fatalf("labels %v: want rule, instance and model_name, no severity", kv.Labels)
	}
	for i, want := range []float64{math.NaN(), 43, 43, 43, math.NaN()} {
		got := kv.At(i).(float64)
		if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("step %d: %v, want %v", i, got, want)
		}
	}
	if v := frames[2].Fields[1].At(0).(float64); !math.IsNaN(v) {
		t.Errorf("the calm instance's series holds %v, want NaN", v)
	}
	if empty := RecommendationSeries(diagnosis.Result{}); len(empty) != 1 {
		t.Errorf("an empty result gives %d frames, want 1 (no frames would turn the alert rule to NoData)", len(empty))
	}
}
