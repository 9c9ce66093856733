package plan_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

func objectives(t *testing.T, raw string) []slo.Objective {
	t.Helper()
	os, err := slo.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return os
}

func TestSLOPlan(t *testing.T) {
	all := objectives(t, `[
		{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"},
		{"name": "e2e-30s", "indicator": "e2e", "threshold": 30, "objective": 0.99, "window": "7d"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "7d"}]`)
	sc := plan.Scope{From: t0, To: t0.Add(2 * time.Hour), Interval: time.Minute, Instance: "vllm-0.*"}
	for _, c := range []struct {
		name          string
		names         []string
		families      []string
		signals       []series.Signal
		window        time.Duration
		budgetStep    time.Duration
		withDiagnosis bool
	}{
		{"every objective: their families, availability's signals, the longest window", nil,
			[]string{vllm.TimeToFirstToken, vllm.E2ELatency}, plan.AvailabilitySignals, 28 * 24 * time.Hour, 40 * time.Minute, false},
		{"one objective: its family and window alone", []string{"e2e-30s"},
			[]string{vllm.E2ELatency}, nil, 7 * 24 * time.Hour, 10 * time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewSLO(settings, sc, all, c.names, c.withDiagnosis)
			if err != nil {
				t.Fatal(err)
			}
			// Recent reaches back over the 6 h burn window before the range's end, to a step
			// of Budget's, where Budget, over the window before it, ends.
			recentFrom := sc.To.Add(-slo.BurnLong).Truncate(c.budgetStep)
			for _, x := range []struct {
				what      string
				got, want any
			}{
				{"families", strings.Join(p.Recent.Histograms, " "), strings.Join(c.families, " ")},
				{"signals", len(p.Recent.Signals), len(c.signals)},
				{"recent start: the 6 h burn window before the range's end", p.Recent.Start, recentFrom},
				{"recent step: the panel's", p.Recent.Step, time.Minute},
				{"budget step: the window over 1000, to the minute", p.Budget.Step, c.budgetStep},
				{"budget start: the window before recent", p.Budget.Start, recentFrom.Add(-c.window).Truncate(c.budgetStep)},
				{"budget end: where recent begins", p.Budget.End, recentFrom},
				{"instance filter", p.Budget.Instance, "vllm-0.*"},
				{"no diagnosis", p.Diagnosis == nil, true},
			} {
				if x.got != x.want {
					t.Errorf("%s: %v, want %v", x.what, x.got, x.want)
				}
			}
		})
	}
	t.Run("attribution plans the diagnosis of the range", func(t *testing.T) {
		p, err := plan.NewSLO(settings, sc, all, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if p.Diagnosis == nil || !p.Diagnosis.From.Equal(t0) || !p.Diagnosis.To.Equal(sc.To) {
			t.Errorf("diagnosis %+v, want one over the range", p.Diagnosis)
		}
	})
}

func TestSLOPlanRefuses(t *testing.T) {
	one := objectives(t, `[{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`)
	for _, c := range []struct {
		name       string
		objectives []slo.Objective
		names      []string
		scope      plan.Scope
		says       []string
	}{
		{"no objectives in the settings", nil, nil, hour(t0), []string{"no service-level objectives", "slos"}},
		{"an objective the settings lack", one, []string{"ttft-1s"}, hour(t0), []string{`slo "ttft-1s"`, "they are ttft-2s"}},
		{"a range shorter than a step", one, nil, plan.Scope{From: t0, To: t0.Add(time.Second)}, []string{"time range", "shorter than one step"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := plan.NewSLO(settings, c.scope, c.objectives, c.names, false)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}

// A diagnosis reads the settings' objectives' events beside the rules' signals, so that each
// finding's misses are counted; without objectives, nothing more.
func TestDiagnosisPlanReadsTheObjectivesEvents(t *testing.T) {
	sc := plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: time.Minute}
	withSLOs := settings
	withSLOs.Objectives = objectives(t, `[
		{"name": "e2e-30s", "indicator": "e2e", "threshold": 30, "objective": 0.99, "window": "7d"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "7d"}]`)
	for _, c := range []struct {
		name       string
		settings   plan.Settings
		wantFamily bool
		objectives int
	}{
		{"objectives: their family and availability's signals", withSLOs, true, 2},
		{"no objectives: neither", settings, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			// kv_cache_saturated reads neither the E2E histogram nor the abort and error shares.
			p, err := plan.NewDiagnosis(c.settings, sc, []string{"kv_cache_saturated"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(p.Metrics.Histograms, vllm.E2ELatency); got != c.wantFamily {
				t.Errorf("histograms %v: E2E's %t, want %t", p.Metrics.Histograms, got, c.wantFamily)
			}
			for _, s := range []series.Signal{series.AbortRatio, series.ErrorRatio} {
				if got := slices.Contains(p.Metrics.Signals, s); got != c.wantFamily {
					t.Errorf("signals %v: %s %t, want %t", p.Metrics.Signals, s, got, c.wantFamily)
				}
			}
			if len(p.Objectives) != c.objectives {
				t.Errorf("%d objectives, want %d", len(p.Objectives), c.objectives)
			}
		})
	}
}

// Goodput reads the range alone, with the finished requests whatever the objectives.
func TestSLOGoodputRequest(t *testing.T) {
	latency := objectives(t, `[{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`)
	sc := plan.Scope{From: t0, To: t0.Add(2 * time.Hour), Interval: time.Minute}
	p, err := plan.NewSLO(settings, sc, latency, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Goodput()
	if !r.Start.Equal(p.From) || !slices.Equal(r.Signals, plan.AvailabilitySignals) || !slices.Equal(r.Histograms, []string{vllm.TimeToFirstToken}) {
		t.Errorf("goodput request from %s, signals %v, histograms %v; want from %s, %v and the TTFT histogram", r.Start, r.Signals, r.Histograms, p.From, plan.AvailabilitySignals)
	}
}

// The diagnosis is given the settings' TTFT objectives (past_the_knee sizes admission control
// from them), and no other indicator's.
func TestDiagnosisPlanGivesTheTTFTObjectives(t *testing.T) {
	sc := plan.Scope{From: t0, To: t0.Add(time.Hour), Interval: time.Minute}
	s := settings
	s.Objectives = objectives(t, `[
		{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d", "model": "llama-.*"},
		{"name": "e2e-30s", "indicator": "e2e", "threshold": 30, "objective": 0.99, "window": "7d"}]`)
	p, err := plan.NewDiagnosis(s, sc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Options.TTFTObjectives
	if len(got) != 1 || got[0].Name != "ttft-1s" || got[0].Seconds != 1 || !got[0].Applies("llama-3") || got[0].Applies("qwen") {
		t.Errorf("TTFT objectives %+v, want ttft-1s of 1 s for llama models only", got)
	}
}

// TestSLOPlanForBurn: every step of the range reads the windows before it, whatever the
// objective's window.
func TestSLOPlanForBurn(t *testing.T) {
	raw := `[{"name": "a", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"}]`
	for _, c := range []struct {
		name       string
		span       time.Duration
		budgetStep time.Duration
	}{
		{"2 hours: the ticket's 3 days before, every 4 minutes ((3 d + 2 h) / 1000)", 2 * time.Hour, 4 * time.Minute},
		{"a day: every 6 minutes ((3 d + 1 d) / 1000)", 24 * time.Hour, 6 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := plan.Scope{From: t0, To: t0.Add(c.span), Interval: time.Minute}
			p, err := plan.NewSLO(settings, sc, objectives(t, raw), nil, true)
			if err != nil {
				t.Fatal(err)
			}
			p = p.ForBurn()
			for _, x := range []struct {
				what      string
				got, want any
			}{
				{"recent start: the 6 h burn window before the range's start", p.Recent.Start, t0.Add(-slo.BurnLong)},
				{"budget start: the 3 d before the range's start", p.Budget.Start, t0.Add(-3 * 24 * time.Hour).Truncate(c.budgetStep)},
				{"budget step", p.Budget.Step, c.budgetStep},
				{"budget end", p.Budget.End, sc.To},
			} {
				if x.got != x.want {
					t.Errorf("%s: %v, want %v", x.what, x.got, x.want)
				}
			}
		})
	}
}

func TestGoodputSearches(t *testing.T) {
	all := objectives(t, `[{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`)
	for _, c := range []struct {
		name      string
		instance  string
		rangeLen  time.Duration
		searches  int
		instances []string
	}{
		{"every sub-window of the range and the lead before it, for the fleet", "", 2 * time.Hour, 26, nil},
		{"an exact instance goes to the backend", "vllm-00:8000", time.Hour, 14, []string{"vllm-00:8000"}},
		{"a regular expression does not: the metrics' keys filter the spans", "vllm-0.*", time.Hour, 14, nil},
		{"a long range starts with half the searches' budget", "", 30 * 24 * time.Hour, plan.MaxGoodputSearches / 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.NewSLO(settings, plan.Scope{From: t0, To: t0.Add(c.rangeLen), Interval: time.Minute, Instance: c.instance}, all, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			qs := p.GoodputSearches()
			if len(qs) != c.searches {
				t.Fatalf("%d searches, want %d", len(qs), c.searches)
			}
			if !qs[0].From.Equal(p.From.Add(-plan.GoodputLead)) || !qs[len(qs)-1].To.Equal(p.To) {
				t.Errorf("searches from %s to %s, want from %s to %s", qs[0].From, qs[len(qs)-1].To, p.From.Add(-plan.GoodputLead), p.To)
			}
			for i, q := range qs {
				if (i > 0 && !q.From.Equal(qs[i-1].To)) || q.Limit != traces.DefaultMaxLimit || !slices.Equal(q.Instances, c.instances) {
					t.Errorf("search %d: %+v, want it to follow the one before, at limit %d, instances %v", i, q, traces.DefaultMaxLimit, c.instances)
				}
			}
		})
	}
}

// TestSLOPlanOverALongRange: a range longer than the burn windows is read at the panel's step
// from the last of Budget's steps at or before its start; Budget holds the longest objective's
// window before that at no more than 1000 steps.
func TestSLOPlanOverALongRange(t *testing.T) {
	raw := `[{"name": "a", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "7d"},
		{"name": "b", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`
	sc := plan.Scope{From: t0.Add(7 * time.Minute), To: t0.Add(12 * time.Hour), Interval: time.Minute}
	p, err := plan.NewSLO(settings, sc, objectives(t, raw), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	step := 40 * time.Minute // 28 d / 1000, rounded to a minute
	start := sc.From.Truncate(step)
	for _, x := range []struct {
		what      string
		got, want any
	}{
		{"recent start: the budget's end", p.Recent.Start, start},
		{"recent step: the panel's", p.Recent.Step, time.Minute},
		{"budget step", p.Budget.Step, step},
		{"budget start: 28 d before it", p.Budget.Start, start.Add(-28 * 24 * time.Hour).Truncate(step)},
		{"budget end: the last of its steps at or before the range's start", p.Budget.End, start},
	} {
		if x.got != x.want {
			t.Errorf("%s: %v, want %v", x.what, x.got, x.want)
		}
	}
}

// TestSLOPlanMeetsOnThePanelsGrid: with a panel step that does not divide 40 minutes, the
// budget's step is a whole number of it, so the budget ends on the range's grid.
func TestSLOPlanMeetsOnThePanelsGrid(t *testing.T) {
	raw := `[{"name": "b", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`
	sc := plan.Scope{From: t0.Add(7 * time.Minute), To: t0.Add(2 * time.Hour), Interval: 70 * time.Second}
	p, err := plan.NewSLO(settings, sc, objectives(t, raw), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Budget.Step != 2450*time.Second || p.Budget.End.After(p.From) || p.Budget.End.Sub(p.Recent.Start) != 0 ||
		!p.Budget.End.Truncate(p.Recent.Step).Equal(p.Budget.End) {
		t.Errorf("budget every %s to %s, recent every %s from %s; want every 2450 s (35 × 70 s) to a 70 s step at or before %s",
			p.Budget.Step, p.Budget.End, p.Recent.Step, p.Recent.Start, p.From)
	}
}
