package plan_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// TestNewExplain shows what an explain query fetches once its trace is known, without a
// server: its instance's and model's metrics (quoted) around it or over the query's range when
// larger, and its peers around its start.
func TestNewExplain(t *testing.T) {
	start := t0.Add(30 * time.Minute)
	req := traces.Request{TraceID: "abc", Instance: "10.0.0.1:8000", Model: "meta-llama/Llama-3.1-8B", Start: start, End: start.Add(2 * time.Minute)}
	cases := []struct {
		name            string
		scope           plan.Scope
		req             traces.Request
		from, to        time.Time
		instance, model string
	}{
		{"a short range: the request ± the pad", plan.Scope{From: start, To: start.Add(time.Minute)}, req,
			start.Add(-plan.ExplainPad), req.End.Add(plan.ExplainPad), `10\.0\.0\.1:8000`, `meta-llama/Llama-3\.1-8B`},
		{"a larger range: the range", plan.Scope{From: t0, To: t0.Add(time.Hour)}, req,
			t0, t0.Add(time.Hour), `10\.0\.0\.1:8000`, `meta-llama/Llama-3\.1-8B`},
		{"the range on one side, the pad on the other", plan.Scope{From: t0, To: start}, req,
			t0, req.End.Add(plan.ExplainPad), `10\.0\.0\.1:8000`, `meta-llama/Llama-3\.1-8B`},
		{"a span without a model: every model of the instance", plan.Scope{From: t0, To: t0.Add(time.Hour)}, traces.Request{TraceID: "abc", Instance: "vllm-01:8000", Start: start, End: start},
			t0, t0.Add(time.Hour), "vllm-01:8000", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan.NewExplain(settings, c.scope, c.req)
			if p.MetricsErr != nil {
				t.Fatal(p.MetricsErr)
			}
			if p.Metrics.From != c.from || p.Metrics.To != c.to {
				t.Errorf("metrics over %v–%v, want %v–%v", p.Metrics.From, p.Metrics.To, c.from, c.to)
			}
			if m := p.Metrics.Metrics; m.Instance != c.instance || m.Model != c.model {
				t.Errorf("metrics filters %q %q, want %q %q", m.Instance, m.Model, c.instance, c.model)
			}
			for _, s := range series.JoinSignals() {
				if !slices.Contains(p.Metrics.Signals, s) {
					t.Errorf("%s is not fetched: the join needs it", s)
				}
			}
			want := traces.Query{From: c.req.Start.Add(-plan.ExplainPad), To: c.req.Start.Add(plan.ExplainPad), Instances: []string{c.req.Instance}, Limit: traces.DefaultMaxLimit}
			if p.Peers.From != want.From || p.Peers.To != want.To || !slices.Equal(p.Peers.Instances, want.Instances) || p.Peers.Limit != want.Limit || p.Peers.MinTTFT != 0 || len(p.Peers.Models) != 0 {
				t.Errorf("peers %+v, want %+v", p.Peers, want)
			}
			if from, to := p.Shown(); from != c.req.Start.Add(-plan.ExplainPad) || to != c.req.End.Add(plan.ExplainPad) {
				t.Errorf("shown %v–%v, want the request ± %s whatever the range", from, to, plan.ExplainPad)
			}
		})
	}
}
