package frames

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

func verdictRows() []verdict.Row {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	return []verdict.Row{
		{Key: series.Key{Instance: "10.0.0.1:8000", Model: "m"}, Optimisation: verdict.SpecDecode, Expected: "acceptance above 0.7",
			Baseline: "acceptance 0.35", Current: "acceptance 0.85", Change: "acceptance 0.35 → 0.85", Outcome: verdict.Worked, Reason: "because",
			BaselineStats: verdict.Stats{RequestRate: 2, PromptLength: 600, OutputLength: 150, Requests: 2400, Covered: verdict.Window{From: t0, To: t0.Add(time.Hour)}},
			CurrentStats:  verdict.Stats{RequestRate: math.NaN(), PromptLength: math.NaN(), OutputLength: math.NaN()}},
	}
}

func TestVerdictFrameIsOneTableWithTheContractFields(t *testing.T) {
	f := Verdict(verdictRows(), "q", []string{"baseline: no data"})
	if len(f) != 1 || f[0].Meta == nil || f[0].Meta.Type != data.FrameTypeTable {
		t.Fatalf("want one table frame, got %d frames", len(f))
	}
	want := []string{"instance", "model_name", "optimisation", "expected", "baseline", "current", "change", "verdict", "reason",
		"baseline_request_rate", "current_request_rate", "baseline_prompt_length", "current_prompt_length",
		"baseline_output_length", "current_output_length", "baseline_requests", "current_requests"}
	for _, name := range want {
		if fld, _ := f[0].FieldByName(name); fld == nil {
			t.Errorf("field %q missing", name)
		}
	}
	if v, _ := f[0].ConcreteAt(7, 0); v != "worked" {
		t.Errorf("verdict %v, want worked", v)
	}
	if len(f[0].Meta.Notices) != 1 {
		t.Errorf("notices %v, want the one given", f[0].Meta.Notices)
	}
}

func TestVerdictLoadFieldsCarryUnitsAndNullForUnknown(t *testing.T) {
	f := Verdict(verdictRows(), "", nil)[0]
	cases := []struct {
		field, unit string
		null        bool
	}{
		{"baseline_request_rate", "reqps", false},
		{"current_request_rate", "reqps", true},
		{"baseline_prompt_length", "short", false},
		{"current_output_length", "short", true},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			fld, _ := f.FieldByName(c.field)
			if fld == nil || fld.Config == nil || fld.Config.Unit != c.unit {
				t.Fatalf("field %q: want unit %q", c.field, c.unit)
			}
			if _, ok := fld.ConcreteAt(0); ok == c.null {
				t.Errorf("null = %v, want %v", !ok, c.null)
			}
		})
	}
}

func TestPromiseFrameHasARowPerInstanceAndNullForAChangeFromZero(t *testing.T) {
	p := series.Promise{Signal: series.PreemptionRate, Direction: series.Down, Sentence: "fewer"}
	f := Promise("kv_cache_saturated", []verdict.PromiseCheck{
		{Key: series.Key{Instance: "a:8000", Model: "m"}, Promise: p, Before: 2, After: 0, Change: -1, Outcome: verdict.Moved, Sentence: "went"},
		{Key: series.Key{Instance: "b:8000", Model: "m"}, Promise: p, Before: 0, After: 1, Change: math.Inf(1), Outcome: verdict.GotWorse, Sentence: "rose"},
	})
	if f.Name != "promise" || f.Meta == nil || f.Meta.Type != data.FrameTypeTable || f.Rows() != 2 {
		t.Fatalf("want a promise table of two rows, got %q with %d", f.Name, f.Rows())
	}
	cases := []struct {
		field string
		row   int
		want  any
	}{
		{"rule", 0, "kv_cache_saturated"},
		{"metric", 0, "preemption_rate"},
		{"direction", 1, "down"},
		{"before", 0, 2.0},
		{"change", 0, -1.0},
		{"change", 1, nil},
		{"outcome", 1, "got worse"},
		{"sentence", 0, "went"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.field, c.row), func(t *testing.T) {
			fld, _ := f.FieldByName(c.field)
			if fld == nil {
				t.Fatalf("no %s field", c.field)
			}
			got, ok := fld.ConcreteAt(c.row)
			if !ok {
				got = nil
			}
			if got != c.want {
				t.Errorf("%v, want %v", got, c.want)
			}
		})
	}
}
