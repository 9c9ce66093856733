package frames

import (
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

var reqStart = time.Date(2026, 8, 14, 10, 3, 7, 0, time.UTC)

func info(s series.Signal) SignalInfo {
	return SignalInfo{Label: "L " + string(s), Unit: "u " + string(s)}
}

// joined returns a row with every stage, or only TTFT and e2e when bare.
func joined(bare bool) correlate.Row {
	r := traces.Request{TraceID: "0123456789abcdef0123456789abcdef", Start: reqStart, End: reqStart.Add(5 * time.Second),
		Instance: "10.0.0.1:8000", Model: "llama", Queue: 3.1, Prefill: 1, Decode: 0.8, TTFT: 4.1, E2E: 5, PromptTokens: 900, OutputTokens: 41}
	r.Present = 1<<traces.FieldQueue | 1<<traces.FieldPrefill | 1<<traces.FieldDecode | 1<<traces.FieldTTFT | 1<<traces.FieldE2E |
		1<<traces.FieldPromptTokens | 1<<traces.FieldOutputTokens
	if bare {
		r.Present = 1<<traces.FieldTTFT | 1<<traces.FieldE2E
	}
	states := make([]correlate.State, len(series.Joined))
	for i := range states {
		states[i] = correlate.State{AtStart: float64(i), Worst: math.NaN()}
	}
	return correlate.Row{Request: r, MetricsAt: reqStart.Truncate(15 * time.Second), States: states, DecodePerToken: 0.02,
		Findings: []*diagnosis.Finding{{Rule: diagnosis.KVCacheSaturated}, {Rule: diagnosis.PastTheKnee}},
		Reasons:  []correlate.Reason{{Code: correlate.QueueOverHalf, Value: 3.1, Reference: 5}, {Code: correlate.TTFTAbovePercentile, Value: 4.1, Reference: 2, Scale: 300}}}
}

func cell(t *testing.T, f *data.Frame, name string, row int) any {
	t.Helper()
	field, _ := f.FieldByName(name)
	if field == nil {
		t.Fatalf("no field %q", name)
	}
	v, ok := field.ConcreteAt(row)
	if !ok {
		return nil
	}
	return v
}

func TestRequestsFrameHasOneRowPerRequestWithItsStagesStateAndReasons(t *testing.T) {
	f := Requests([]correlate.Row{joined(false), joined(true)}, TraceLinks{}, info, "q", []string{"12 of 3,400"})
	if f.Rows() != 2 {
		t.Fatalf("%d rows, want 2", f.Rows())
	}
	if got := cell(t, f, "queue", 0); got != 3.1 {
		t.Errorf("queue %v, want 3.1", got)
	}
	for _, name := range []string{"queue", "prefill", "decode", "prompt_tokens"} {
		if got := cell(t, f, name, 1); got != nil {
			t.Errorf("%s %v for a span without it, want empty", name, got)
		}
	}
	if got := cell(t, f, "e2e", 1); got != 5.0 {
		t.Errorf("e2e %v, want the span's 5", got)
	}
	for j, js := range series.Joined {
		if got := cell(t, f, string(js.Signal), 0); got != float64(j) {
			t.Errorf("%s at start %v, want %v", js.Signal, got, j)
		}
		if got := cell(t, f, string(js.Signal)+"_worst", 0); got != nil {
			t.Errorf("%s worst %v, want empty for NaN", js.Signal, got)
		}
		field, _ := f.FieldByName(string(js.Signal))
		if field.Config.Unit != info(js.Signal).Unit {
			t.Errorf("%s unit %q, want the signal's %q", js.Signal, field.Config.Unit, info(js.Signal).Unit)
		}
	}
	if got := cell(t, f, "findings", 0); got != "kv_cache_saturated,past_the_knee" {
		t.Errorf("findings %q, want the rule ids comma-separated", got)
	}
	if got := cell(t, f, "anomalies", 0); got != "queue_over_half,ttft_above_p99" {
		t.Errorf("anomalies %q, want the reason codes comma-separated", got)
	}
	if got := cell(t, f, "anomaly_detail", 0).(string); !strings.Contains(got, "waited 3.1 s") || !strings.Contains(got, "; ") {
		t.Errorf("anomaly detail %q, want each reason's text", got)
	}
	if f.Meta == nil || len(f.Meta.Notices) != 1 || f.Meta.Notices[0].Text != "12 of 3,400" || f.Meta.ExecutedQueryString != "q" {
		t.Errorf("meta %+v, want the notice and the executed query", f.Meta)
	}
}

func TestDrillDownURL(t *testing.T) {
	cases := []struct {
		name string
		d    DrillDown
		want string
	}{
		{"a request: every variable, expressions left to Grafana", DrillDown{VLLMUID: "vllm-2", TracesUID: "jaeger", TraceID: "${__value.raw}",
			Instance: "${__data.fields.instance}", Model: "${__data.fields.model}", From: "1", To: "2"},
			"/d/" + DrillDownUID + "?var-datasource=vllm-2&var-traces=jaeger&var-traceId=${__value.raw}&var-instance=${__data.fields.instance}&var-model=${__data.fields.model}&from=1&to=2"},
		{"a finding: no trace id, values encoded", DrillDown{VLLMUID: "a b&c", Instance: "10.0.0.1:8000", From: "now-1h", To: "now"},
			"/d/" + DrillDownUID + "?var-datasource=a+b%26c&var-instance=10.0.0.1%3A8000&from=now-1h&to=now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DrillDownURL(c.d); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestRequestLinks(t *testing.T) {
	lookup := map[string]any{"queryType": "traceql", "query": TraceIDValue}
	cases := []struct {
		name     string
		links    TraceLinks
		internal bool
	}{
		{"the trace data source's own lookup first", TraceLinks{DatasourceUID: "tempo-uid", Backend: "Tempo", Query: lookup}, true},
		{"no data source uid: only the drill-down", TraceLinks{Backend: "Tempo", Query: lookup}, false},
		{"no lookup query: only the drill-down", TraceLinks{DatasourceUID: "tempo-uid", Backend: "Tempo"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Requests([]correlate.Row{joined(false)}, c.links, info, "", nil)
			id, _ := f.FieldByName("trace_id")
			links := id.Config.Links
			if c.internal {
				if len(links) != 2 || links[0].Internal == nil || links[0].Internal.DatasourceUID != c.links.DatasourceUID ||
					links[0].Title != "Open trace in Tempo" {
					t.Fatalf("links %+v, want the trace data source first", links)
				}
				if q := links[0].Internal.Query.(map[string]any); !maps.Equal(q, lookup) {
					t.Fatalf("trace query %v, want %v", q, lookup)
				}
			} else if len(links) != 1 {
				t.Fatalf("links %+v, want only the drill-down", links)
			}
			drill := links[len(links)-1]
			if !strings.HasPrefix(drill.URL, "/d/"+DrillDownUID+"?") || !strings.Contains(drill.URL, "var-traceId=${__value.raw}") {
				t.Fatalf("drill-down URL %q", drill.URL)
			}
			from, to := cell(t, f, "drilldown_from", 0), cell(t, f, "drilldown_to", 0)
			wantFrom := strconv.FormatInt(reqStart.Add(-DrillDownPad).UnixMilli(), 10)
			wantTo := strconv.FormatInt(reqStart.Add(5*time.Second+DrillDownPad).UnixMilli(), 10)
			if from != wantFrom || to != wantTo {
				t.Fatalf("drill-down range %v to %v, want the request ± %s: %s to %s", from, to, DrillDownPad, wantFrom, wantTo)
			}
		})
	}
}

func TestExplanationFrames(t *testing.T) {
	e := correlate.Explain(joined(false))
	fs := Explanation(e, nil, info, []string{"note"}, nil)
	if len(fs) != 4 {
		t.Fatalf("%d frames, want explanation, stages, details and request", len(fs))
	}
	expl, stages, details, mark := fs[0], fs[1], fs[2], fs[3]
	if cell(t, expl, "explanation", 0) != e.Sentence || cell(t, expl, "dominant_stage", 0) != string(e.Dominant) || cell(t, expl, "slow_stage", 0) != string(e.Focus) {
		t.Fatalf("explanation row %v / %v / %v, want the sentence, dominant and slow stage", cell(t, expl, "explanation", 0), cell(t, expl, "dominant_stage", 0), cell(t, expl, "slow_stage", 0))
	}
	if cell(t, expl, "finding", 0) != e.Finding.Rule || cell(t, expl, "queue_seconds", 0) != 3.1 {
		t.Fatalf("finding %v, queue %v", cell(t, expl, "finding", 0), cell(t, expl, "queue_seconds", 0))
	}
	if details.Name != ExplanationDetailsFrame || details.Rows() != 1 || cell(t, details, "kv_usage", 0) != 0.0 {
		t.Fatalf("details frame %q with %d rows, kv_usage %v; want one row with the metric state", details.Name, details.Rows(), cell(t, details, "kv_usage", 0))
	}
	if stages.Rows() != len(e.Stages) {
		t.Fatalf("%d stage rows, want %d", stages.Rows(), len(e.Stages))
	}
	for i, st := range e.Stages {
		if cell(t, stages, "stage", i) != string(st.Stage) || cell(t, stages, "seconds", i) != st.Seconds {
			t.Fatalf("stage row %d: %v %v, want %s %v", i, cell(t, stages, "stage", i), cell(t, stages, "seconds", i), st.Stage, st.Seconds)
		}
	}
	if cell(t, mark, "time", 0) != reqStart || cell(t, mark, "timeEnd", 0) != reqStart.Add(5*time.Second) {
		t.Fatalf("the request's mark spans %v to %v", cell(t, mark, "time", 0), cell(t, mark, "timeEnd", 0))
	}
	if tags := cell(t, mark, "tags", 0).(string); !strings.Contains(tags, "kv_cache_saturated") {
		t.Fatalf("mark tags %q, want the active findings", tags)
	}

	bare := correlate.Explain(joined(true))
	stages = Explanation(bare, nil, info, nil, nil)[1]
	if stages.Rows() != 0 {
		t.Fatalf("a span without stage latencies gives %d stage rows, want none", stages.Rows())
	}
}
