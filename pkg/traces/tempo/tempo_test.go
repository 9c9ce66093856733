package tempo

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

// tempoFixtureFrom starts a range that covers the recorded Tempo requests.
var tempoFixtureFrom = time.Date(2026, 11, 29, 8, 50, 0, 0, time.UTC)

func tempoQuery() traces.Query {
	return traces.Query{From: tempoFixtureFrom, To: tempoFixtureFrom.Add(20 * time.Minute)}
}

func TestTempoSearchReturnsRequestsAsSent(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_select.json"}}, traces.Options{}, New)
	reqs, info, err := tp.Search(context.Background(), tempoQuery())
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || info.Traces != 3 {
		t.Fatalf("got %d requests of %d traces, want the fixture's 3", len(reqs), info.Traces)
	}
	sent := tracetest.LoadSent(t, "tempo_sent_spans.json")
	for _, r := range reqs {
		tracetest.CheckSent(t, r, sent)
		if r.Service != "vllm" || r.Model != "facebook/opt-125m" {
			t.Errorf("%s: service %q model %q", r.RequestID, r.Service, r.Model)
		}
	}
	if !slices.IsSortedFunc(reqs, func(a, b traces.Request) int { return b.Start.Compare(a.Start) }) {
		t.Error("requests are not newest first")
	}
}

func TestTempoSearchPadsTraceIDsWithoutLeadingZeros(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_leading_zero_trace_ids.json"}}, traces.Options{}, New)
	q := tempoQuery()
	q.To = q.From.Add(time.Hour)
	reqs, info, err := tp.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	sent := tracetest.LoadSent(t, "tempo_sent_spans.json")
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if want := sent[r.RequestID].TraceID; r.TraceID != want {
			t.Errorf("%s: trace id %s, sent %s", r.RequestID, r.TraceID, want)
		}
	}
	// These spans carry only their request id: shown, and counted for a notice.
	if info.Incomplete != 2 || len(reqs[0].Missing()) != 5 {
		t.Errorf("Incomplete = %d, Missing = %v; want both requests reported incomplete", info.Incomplete, reqs[0].Missing())
	}
}

func TestTempoSearchKeepsOnlyRequestsStartedInRange(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_select.json"}}, traces.Options{}, New)
	sent := tracetest.LoadSent(t, "tempo_sent_spans.json")
	q := traces.Query{From: tracetest.MustTime(t, sent["cmpl-0003"].Start), To: tracetest.MustTime(t, sent["cmpl-0004"].Start)}
	reqs, _, err := tp.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.RequestID)
	}
	if want := []string{"cmpl-0004", "cmpl-0003"}; !slices.Equal(ids, want) {
		t.Errorf("requests %v, want %v", ids, want)
	}
}

func TestTempoSearchKeepsTheNewestWithinTheLimit(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_select.json"}}, traces.Options{}, New)
	q := tempoQuery()
	q.Limit = 2
	reqs, info, err := tp.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].RequestID != "cmpl-0005" || reqs[1].RequestID != "cmpl-0004" || !info.Truncated {
		t.Errorf("got %d requests (%v), truncated %v; want cmpl-0005 and cmpl-0004, truncated", len(reqs), reqs, info.Truncated)
	}
}

func TestTempoSearchSendsTypedEscapedTraceQL(t *testing.T) {
	tests := []struct {
		name    string
		q       traces.Query
		opts    traces.Options
		want    []string
		notWant []string
	}{
		{"TTFT threshold as a float", traces.Query{MinTTFT: 1}, traces.Options{},
			[]string{"span.gen_ai.latency.time_to_first_token >= 1.0 }"}, []string{">= 1 "}},
		{"fractional TTFT", traces.Query{MinTTFT: 0.25}, traces.Options{}, []string{">= 0.25 }"}, nil},
		{"no TTFT condition without a minimum", traces.Query{}, traces.Options{}, nil, []string{"time_to_first_token >="}},
		{"service and span names escaped", traces.Query{}, traces.Options{ServiceName: `a"b\c`, SpanName: "x\ny"},
			[]string{`resource.service.name = "a\"b\\c"`, `name = "x\ny"`}, nil},
		{"configured attributes selected, unscoped (span or resource)", traces.Query{}, traces.Options{InstanceAttribute: "k8s.pod.name", ModelAttribute: "my model"},
			[]string{", .k8s.pod.name,", `, ."my model",`}, nil},
		{"a threshold below a microsecond as 0.0 (Finish applies it exactly)", traces.Query{MinTTFT: 1e-300}, traces.Options{},
			[]string{"time_to_first_token >= 0.0 }"}, nil},
		{"a threshold above 10⁹ s as 10⁹", traces.Query{MinTTFT: 1e300}, traces.Options{},
			[]string{"time_to_first_token >= 1000000000.0 }"}, nil},
		{"newest traces first", traces.Query{}, traces.Options{}, []string{"| select(", ") with(most_recent=true)"}, nil},
		{"one instance, exact, on the resource", traces.Query{Instances: []string{"vllm-07:8000"}, MinTTFT: 2}, traces.Options{},
			[]string{`&& resource.service.instance.id = "vllm-07:8000" &&`, "time_to_first_token >= 2.0 }"}, []string{"=~"}},
		{"several instances as an anchored, escaped regular expression", traces.Query{Instances: []string{"10.0.0.1:8000", `a"b`}}, traces.Options{},
			[]string{`resource.service.instance.id =~ "10\\.0\\.0\\.1:8000|a\"b"`}, nil},
		{"an instance value with quotes and backslashes", traces.Query{Instances: []string{`x"y\z`}}, traces.Options{},
			[]string{`resource.service.instance.id = "x\"y\\z"`}, nil},
		{"another instance attribute, unscoped (span or resource)", traces.Query{Instances: []string{"pod-1"}}, traces.Options{InstanceAttribute: "k8s.pod.name"},
			[]string{`&& .k8s.pod.name = "pod-1"`}, nil},
		{"no instance condition without instances", traces.Query{}, traces.Options{}, nil, []string{"resource.service.instance.id ="}},
		{"one model, exact, on the span or its resource", traces.Query{Instances: []string{"vllm-07:8000"}, Models: []string{"llama-3-8b"}}, traces.Options{},
			[]string{`&& resource.service.instance.id = "vllm-07:8000" && .gen_ai.response.model = "llama-3-8b"`}, []string{"=~"}},
		{"several models as an anchored, escaped regular expression", traces.Query{Models: []string{"qwen2.5-7b", `a"b`}}, traces.Options{},
			[]string{`.gen_ai.response.model =~ "qwen2\\.5-7b|a\"b"`}, nil},
		{"the configured model attribute, quoted", traces.Query{Models: []string{"m"}}, traces.Options{ModelAttribute: "my model"},
			[]string{`."my model" = "m"`}, nil},
		{"no model condition without models", traces.Query{Instances: []string{"vllm-07:8000"}}, traces.Options{}, nil, []string{"gen_ai.response.model ="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, tt.opts, New)
			q := tt.q
			q.From, q.To = tempoQuery().From, tempoQuery().To
			if _, _, err := tp.Search(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			sent := rp.Requests()[0].URL.Query().Get("q")
			for _, w := range tt.want {
				if !strings.Contains(sent, w) {
					t.Errorf("TraceQL %s\nlacks %s", sent, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(sent, w) {
					t.Errorf("TraceQL %s\nhas %s", sent, w)
				}
			}
		})
	}
}

func TestTempoSearchSendsRangeInSecondsAndBounds(t *testing.T) {
	tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{MaxLimit: 500}, New)
	q := traces.Query{From: time.Unix(1795942700, 0), To: time.Unix(1795942800, 500), Limit: 9999}
	if _, _, err := tp.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	got := rp.Requests()[0].URL.Query()
	want := map[string]string{"start": "1795942700", "end": "1795942801", "limit": "500", "spss": "100"}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v)
		}
	}
}

func TestTempoSearchWithNoMatchIsEmpty(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{}, New)
	reqs, info, err := tp.Search(context.Background(), tempoQuery())
	if err != nil || len(reqs) != 0 || info.Truncated {
		t.Errorf("got %v, %+v, %v; want nothing and no error", reqs, info, err)
	}
}

func TestTempoSearchRejectedTraceQLIsDownstream(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 400, File: "tempo_api_search_error_400_bad_traceql.txt"}}, traces.Options{}, New)
	_, _, err := tp.Search(context.Background(), tempoQuery())
	if !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "answered 400") || !strings.Contains(err.Error(), "invalid TraceQL query: parse error") {
		t.Errorf("err = %v; want a downstream 400 quoting Tempo", err)
	}
}

func TestTempoGetReadsEveryStage(t *testing.T) {
	sent := tracetest.LoadSent(t, "tempo_sent_spans.json")
	id := sent["cmpl-0005"].TraceID
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/v2/traces/" + id: {Status: 200, File: "tempo_api_v2_traces_by_id.json"}}, traces.Options{}, New)
	r, err := tp.Get(context.Background(), strings.ToUpper(id))
	if err != nil {
		t.Fatal(err)
	}
	tracetest.CheckWhole(t, r, sent)
}

func TestTempoGetErrors(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		id      string
		route   tracetest.Route
		want    error
		request bool
	}{
		{"unknown id answered with an empty trace", id, tracetest.Route{Status: 200, File: "tempo_api_v2_traces_by_id_not_found.json"}, traces.ErrNotFound, true},
		{"id rejected by Tempo", id, tracetest.Route{Status: 400, File: "tempo_api_traces_by_id_error_400.txt"}, traces.ErrInvalidTraceID, true},
		{"trace without a vLLM span", id, tracetest.Route{Status: 200, File: "tempo_api_v2_traces_by_id_gateway_only.json"}, traces.ErrNotVLLM, true},
		{"id not hex: nothing sent", "not-a-trace-id", tracetest.Route{}, traces.ErrInvalidTraceID, false},
		{"id too long: nothing sent", id + "0", tracetest.Route{}, traces.ErrInvalidTraceID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/v2/traces/" + id: tt.route}, traces.Options{}, New)
			_, err := tp.Get(context.Background(), tt.id)
			if !errors.Is(err, tt.want) || backend.IsDownstreamError(err) {
				t.Errorf("err = %v, want %v and not downstream", err, tt.want)
			}
			if sent := len(rp.Requests()) > 0; sent != tt.request {
				t.Errorf("request sent = %v, want %v", sent, tt.request)
			}
		})
	}
}

func TestTempoCheckSaysWhenNoVLLMSpans(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{}, New)
	h, err := tp.Check(context.Background())
	if err != nil || h.VLLMSpans || !strings.Contains(h.Message, "no span \"llm_request\" of service \"vllm\"") {
		t.Errorf("Check = %+v, %v", h, err)
	}
}
