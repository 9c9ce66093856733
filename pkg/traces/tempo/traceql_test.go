package tempo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// selectList is the attributes a TraceQL query's select() names.
func selectList(t *testing.T, tql string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(tql, " | select(")
	list, _, ok2 := strings.Cut(rest, ") with(")
	if !ok || !ok2 {
		t.Fatalf("no select() in %s", tql)
	}
	return strings.Split(list, ", ")
}

// sentQueries are the TraceQL queries a replay received, in order.
func sentQueries(rp *tracetest.Replay) []string {
	var out []string
	for _, r := range rp.Requests() {
		out = append(out, r.URL.Query().Get("q"))
	}
	return out
}

func TestTempoSelectsWhatTheAnswerReads(t *testing.T) {
	var (
		stages = []string{"span.gen_ai.latency.time_to_first_token", "span.gen_ai.latency.e2e", "span.gen_ai.latency.time_in_queue"}
		v1     = []string{"span.gen_ai.latency.time_in_model_prefill", "span.gen_ai.latency.time_in_model_decode"}
		v0     = []string{"span.gen_ai.latency.time_in_scheduler", "span.gen_ai.latency.time_in_model_forward",
			"span.gen_ai.latency.time_in_model_execute", "span.gen_ai.response.model"}
		tokens   = []string{"span.gen_ai.usage.prompt_tokens", "span.gen_ai.usage.completion_tokens"}
		instance = []string{"resource.service.instance.id", "resource.host.name", ".server.port", ".net.host.port"}
		one      = []string{"vllm-07:8000"}
	)
	tests := []struct {
		name string
		q    traces.Query
		opts traces.Options
		want []string
	}{
		{"V1 spans of one instance: the stages, the split and the tokens; the condition returns the instance",
			traces.Query{Instances: one, Generation: vllm.GenerationV1}, traces.Options{}, slices.Concat(stages, v1, tokens)},
		{"V0 spans: their timings and model instead of the split",
			traces.Query{Instances: one, Generation: vllm.GenerationV0}, traces.Options{}, slices.Concat(stages, v0, tokens)},
		{"a mixed fleet: both vocabularies",
			traces.Query{Instances: one, Generation: vllm.GenerationMix}, traces.Options{}, slices.Concat(stages, v1, v0, tokens)},
		{"the generation unknown: both vocabularies",
			traces.Query{Instances: one}, traces.Options{}, slices.Concat(stages, v1, v0, tokens)},
		{"the fleet: the instance attribute and its host and port fallbacks",
			traces.Query{Generation: vllm.GenerationV1}, traces.Options{}, slices.Concat(stages, v1, tokens, instance)},
		{"a configured instance attribute, unscoped",
			traces.Query{Generation: vllm.GenerationV1}, traces.Options{InstanceAttribute: "k8s.pod.name"},
			slices.Concat(stages, v1, tokens, []string{".k8s.pod.name"}, instance[1:])},
		{"a configured model attribute, unscoped, whatever the generation",
			traces.Query{Instances: one, Generation: vllm.GenerationV1}, traces.Options{ModelAttribute: "my model"},
			slices.Concat(stages, v1, tokens, []string{`."my model"`})},
		{"a model condition returns the model: V0's not asked for",
			traces.Query{Instances: one, Models: []string{"m"}, Generation: vllm.GenerationV0}, traces.Options{},
			slices.Concat(stages, v0[:3], tokens)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, tt.opts, New)
			q := tt.q
			q.From, q.To = tempoQuery().From, tempoQuery().To
			if _, _, err := tp.Search(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			if got := selectList(t, sentQueries(rp)[0]); !slices.Equal(got, tt.want) {
				t.Errorf("select(%s)\nwant select(%s)", strings.Join(got, ", "), strings.Join(tt.want, ", "))
			}
		})
	}
}

// longInstances are n instance names of 60 bytes each.
func longInstances(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("vllm-%03d.inference.eu-west-1.prod.example-company.internal:8000", i)
	}
	return out
}

// TestTempoSplitsASearchPastTheBound: instances and models that make one TraceQL too long are
// searched in several queries, each under the bound, that together name every value once and
// keep every filter; the answer merges theirs.
func TestTempoSplitsASearchPastTheBound(t *testing.T) {
	tests := []struct {
		name              string
		instances, models []string
	}{
		{"50 instances", longInstances(50), nil},
		{"50 instances and 12 models", longInstances(50), []string{
			"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-72B-Instruct",
			"mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mixtral-8x22B-Instruct-v0.1", "google/gemma-2-27b-it", "microsoft/Phi-3.5-mini-instruct",
			"deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "ibm-granite/granite-3.1-8b-instruct", "tiiuae/falcon-40b-instruct", "01-ai/Yi-1.5-34B-Chat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{}, New)
			q := tempoQuery()
			q.Instances, q.Models, q.MinTTFT = tt.instances, tt.models, 0.558445945945946
			_, info, err := tp.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			sent := sentQueries(rp)
			if len(sent) < 2 || info.Query != strings.Join(sent, "\n") {
				t.Fatalf("%d queries sent, info.Query %q; want several, each listed", len(sent), info.Query)
			}
			pairs := map[[2]string]int{}
			for _, tql := range sent {
				if len(tql) >= MaxTraceQLBytes || !strings.Contains(tql, "time_to_first_token >= 0.558445945945946 }") {
					t.Errorf("%d bytes, or without the threshold: %s", len(tql), tql)
				}
				models := conditionValues(t, tql, ".gen_ai.response.model")
				if len(models) == 0 {
					models = []string{""}
				}
				for _, inst := range conditionValues(t, tql, "resource.service.instance.id") {
					for _, m := range models {
						pairs[[2]string{inst, m}]++
					}
				}
			}
			models := tt.models
			if len(models) == 0 {
				models = []string{""}
			}
			for _, inst := range tt.instances {
				for _, m := range models {
					if n := pairs[[2]string{inst, m}]; n != 1 {
						t.Errorf("instance %s, model %q searched %d times, want once", inst, m, n)
					}
				}
			}
			if want := len(tt.instances) * len(models); len(pairs) != want {
				t.Errorf("%d instance and model pairs searched, want %d", len(pairs), want)
			}
		})
	}
}

// conditionValues are the values a TraceQL condition on ref matches: one with `=`, the
// alternatives with `=~` (whose values here hold no regular-expression metacharacter but dots).
func conditionValues(t *testing.T, tql, ref string) []string {
	t.Helper()
	for _, op := range []string{" = ", " =~ "} {
		_, rest, ok := strings.Cut(tql, "{ "+ref+op)
		if !ok {
			_, rest, ok = strings.Cut(tql, " "+ref+op)
		}
		if !ok {
			continue
		}
		lit, err := strconv.QuotedPrefix(rest)
		if err != nil {
			t.Fatalf("condition on %s: %v in %s", ref, err, tql)
		}
		v, _ := strconv.Unquote(lit)
		if op == " = " {
			return []string{v}
		}
		return strings.Split(strings.ReplaceAll(v, `\.`, "."), "|")
	}
	return nil
}

func TestTempoRefusesASearchTooLongForOneValue(t *testing.T) {
	tests := []struct {
		name string
		q    traces.Query
		opts traces.Options
	}{
		{"an instance name of 1,000 bytes", traces.Query{Instances: []string{strings.Repeat("a", 1000)}}, traces.Options{}},
		{"a model name of 1,000 bytes among short ones", traces.Query{Models: []string{"m", strings.Repeat("m", 1000)}}, traces.Options{}},
		{"a service name of 1,000 bytes", traces.Query{}, traces.Options{ServiceName: strings.Repeat("s", 1000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, tt.opts, New)
			q := tt.q
			q.From, q.To = tempoQuery().From, tempoQuery().To
			_, _, err := tp.Search(context.Background(), q)
			if !errors.Is(err, traces.ErrInvalidQuery) || backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "Tempo's TraceQL parser misreads queries longer than 1,024 bytes") {
				t.Errorf("err = %v; want the user's invalid query, saying why", err)
			}
			if n := len(rp.Requests()); n != 0 {
				t.Errorf("%d searches sent, want none", n)
			}
		})
	}
}

// TestTempoFillsWhatItsConditionsMatched: a span set that leaves out the instance and the
// service (an answer to a query without select(), as a Tempo before 2.2 would need) still
// reads as the requests of the instance and service the query matched.
func TestTempoFillsWhatItsConditionsMatched(t *testing.T) {
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_leading_zero_trace_ids.json"}}, traces.Options{}, New)
	q := tempoQuery()
	q.To = q.From.Add(time.Hour)
	q.Instances = []string{"vllm-07:8000"}
	reqs, _, err := tp.Search(context.Background(), q)
	if err != nil || len(reqs) != 2 {
		t.Fatalf("got %d requests, %v; want the fixture's 2", len(reqs), err)
	}
	for _, r := range reqs {
		if r.Instance != "vllm-07:8000" || r.Service != "vllm" {
			t.Errorf("%s: instance %q service %q, want the query's", r.TraceID, r.Instance, r.Service)
		}
	}
}
