package plan_test

import (
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// TestSearchesAskForTheSpansVocabulary: a requests query's searches carry the metrics'
// generation, and an explain query's peers the generation of the request's own span, so that
// Tempo is asked for the attributes those spans carry.
func TestSearchesAskForTheSpansVocabulary(t *testing.T) {
	to := t0.Add(time.Hour)
	r, err := plan.NewRequests(settings, plan.Scope{From: t0, To: to, Instance: "vllm-01:8000"}, plan.RequestFilters{}, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []vllm.Generation{vllm.GenerationV0, vllm.GenerationV1, vllm.GenerationNone} {
		sp := r.Searches(plan.RequestMetrics{}).WithGeneration(g)
		if len(sp.Queries) == 0 {
			t.Fatal("no search planned")
		}
		for _, q := range sp.Queries {
			if q.Generation != g {
				t.Errorf("search %+v for %s spans, want %s", q, q.Generation, g)
			}
		}
	}

	span := func(fields ...traces.Field) traces.Request {
		r := traces.Request{TraceID: "abc", Instance: "vllm-01:8000", Start: t0, End: t0.Add(time.Second)}
		for _, f := range fields {
			r.Present.Add(f)
		}
		return r
	}
	for _, c := range []struct {
		name string
		req  traces.Request
		want vllm.Generation
	}{
		{"a V1 span: the prefill/decode split", span(traces.FieldTTFT, traces.FieldPrefill, traces.FieldDecode), vllm.GenerationV1},
		{"a V0 span: the scheduler's time and no split", span(traces.FieldTTFT, traces.FieldScheduler, traces.FieldForward), vllm.GenerationV0},
		{"a span without latencies says nothing", span(), vllm.GenerationNone},
	} {
		if got := plan.NewExplain(settings, plan.Scope{From: t0, To: to}, c.req).Peers.Generation; got != c.want {
			t.Errorf("%s: peers searched for %s spans, want %s", c.name, got, c.want)
		}
	}
}
