package tempo_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
	"github.com/seed/vllm-datasource/pkg/traces/tempo"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// The searches the plugin plans (pkg/plan: a requests query's, an explain query's peers) and
// the health check's, as this source sends them to Tempo.

var planSettings = plan.Settings{Metrics: signals.Config{Labels: signals.DefaultLabels, Scrape: 15 * time.Second}}

// metricsAnswer is what a requests query's metrics answer over [from, to]: the instances, each
// with a constant TTFT p50 of typical (the instance's typical TTFT), and the findings.
func metricsAnswer(t *testing.T, from, to time.Time, typical map[string]float64, findings []diagnosis.Finding) correlate.Input {
	t.Helper()
	set := series.NewSet(series.NewGrid(from, to, 15*time.Second))
	for inst, v := range typical {
		s := series.NewSeries(series.TTFTP50, series.Key{Instance: inst, Model: "meta-llama/Llama-3.1-8B-Instruct"}, set.Grid.Len)
		for i := range s.Values {
			s.Values[i] = v
		}
		set.Put(s)
	}
	in := correlate.Input{From: from, To: to}
	in.WithMetrics(set, findings, nil)
	return in
}

// searchInput is what the plan's searches read of a metrics answer, as the plugin's requests
// handler hands it over.
func searchInput(in correlate.Input) plan.RequestMetrics {
	return plan.RequestMetrics{Set: in.Set, Findings: in.Findings, Thresholds: correlate.Thresholds(in.Typical, 0)}
}

// fleetNames are n instance names as a Kubernetes fleet has them, 60 bytes each.
func fleetNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("vllm-%03d.inference.eu-west-1.prod.example-company.internal:8000", i)
	}
	return out
}

// recorder is a Tempo that keeps the TraceQL it is sent and answers with answer(q), in process
// (thousands of searches, and no socket needed to read what was sent).
type recorder struct {
	mu   sync.Mutex
	sent []string
}

func (r *recorder) client(answer func(q string) string) *http.Client {
	return tracetest.FuncClient(func(req *http.Request) (int, string) {
		q := req.URL.Query().Get("q")
		r.mu.Lock()
		r.sent = append(r.sent, q)
		r.mu.Unlock()
		return http.StatusOK, answer(q)
	})
}

// noTraces is Tempo's answer to a search that matched nothing.
func noTraces(string) string { return `{"traces":[],"metrics":{"completedJobs":1,"totalJobs":1}}` }

// TestEveryTraceQLIsUnderTheLexerBound runs every shape of search the plugin plans through the
// Tempo source and checks that each TraceQL query it sends is under tempo.MaxTraceQLBytes:
// Tempo's TraceQL lexer reads a query through a buffer of 1,024 bytes and misreads a token that
// straddles its end (see MaxTraceQLBytes), so a longer query may be refused whatever it says.
// The shapes take the longest inputs a query can have: fleets of 50 instances with long names,
// instance filters that are long regular expressions, model conditions, thresholds written to
// the last digit, both span vocabularies, and the attribute and service settings.
func TestEveryTraceQLIsUnderTheLexerBound(t *testing.T) {
	from := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour) // two sub-windows: more add searches, not longer ones
	fleet := fleetNames(50)
	typical := map[string]float64{}
	var findings []diagnosis.Finding
	for i, inst := range fleet {
		// Typical TTFTs whose thresholds (3×) print with 16 or 17 digits.
		typical[inst] = 0.18614864864864866 + float64(i)/7
		findings = append(findings, diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Severity: diagnosis.Critical,
			Key: series.Key{Instance: inst, Model: "meta-llama/Llama-3.1-8B-Instruct"}, Start: from.Add(time.Duration(i) * time.Minute), End: to})
	}
	longRegexp := "(" + strings.Join(slices.Collect(func(yield func(string) bool) {
		for _, inst := range fleet {
			if !yield(regexp.QuoteMeta(inst)) {
				return
			}
		}
	}), "|") + ")"
	requests := func(instance string, f plan.RequestFilters, withMetrics bool) func(t *testing.T, g vllm.Generation) []traces.Query {
		return func(t *testing.T, g vllm.Generation) []traces.Query {
			r, err := plan.NewRequests(planSettings, plan.Scope{From: from, To: to, Instance: instance}, f, to)
			if err != nil {
				t.Fatal(err)
			}
			in := correlate.Input{From: from, To: to}
			if withMetrics {
				in = metricsAnswer(t, from, to, typical, findings)
			}
			return r.Searches(searchInput(in)).WithGeneration(g).Queries
		}
	}
	peers := func(instance string) func(t *testing.T, g vllm.Generation) []traces.Query {
		return func(t *testing.T, g vllm.Generation) []traces.Query {
			req := traces.Request{TraceID: "d3be12062b69834af9a5c5b2d733b0da", Instance: instance, Start: from, End: from.Add(8 * time.Second)}
			switch g {
			case vllm.GenerationV1:
				req.Present.Add(traces.FieldPrefill)
			case vllm.GenerationV0:
				req.Present.Add(traces.FieldScheduler)
			}
			return []traces.Query{plan.NewExplain(planSettings, plan.Scope{From: from, To: to}, req).Peers}
		}
	}
	direct := func(q traces.Query) func(t *testing.T, g vllm.Generation) []traces.Query {
		return func(t *testing.T, g vllm.Generation) []traces.Query {
			q.From, q.To, q.Generation = from, to, g
			return []traces.Query{q}
		}
	}
	models := []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen2.5-72B-Instruct",
		"mistralai/Mixtral-8x22B-Instruct-v0.1", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "ibm-granite/granite-3.1-8b-instruct"}
	shapes := []struct {
		name    string
		queries func(t *testing.T, g vllm.Generation) []traces.Query
	}{
		{"requests of a fleet of 50: findings' intervals, the fleet and each instance's threshold per sub-window",
			requests("", plan.RequestFilters{}, true)},
		{"anomalous requests of a fleet of 50 above a minimum TTFT", requests("", plan.RequestFilters{AnomalousOnly: true, MinTTFT: 0.123456789012345, Limit: 1000}, true)},
		{"an instance filter, a regular expression of 50 names, resolved by the metrics", requests(longRegexp, plan.RequestFilters{}, true)},
		{"an instance filter, a regular expression, without the metrics", requests(longRegexp, plan.RequestFilters{MinTTFT: 2.5}, false)},
		{"one instance with a 120-byte name, without the metrics",
			requests(regexp.QuoteMeta(strings.Repeat("gpu-node-", 12)+":8000"), plan.RequestFilters{MinTTFT: 0.987654321098765}, false)},
		{"explain's peers", peers(fleet[49])},
		{"a search of 50 instances and 6 models above a threshold", direct(traces.Query{Instances: fleet, Models: models, MinTTFT: 0.558445945945946})},
		{"a search of 6 models", direct(traces.Query{Models: models, MinTTFT: 1e-7})},
	}
	settings := []struct {
		name string
		opts traces.Options
	}{
		{"default settings", traces.Options{}},
		{"configured attributes and a 63-byte service name", traces.Options{InstanceAttribute: "k8s.pod.name", ModelAttribute: "llm.served_model_name",
			ServiceName: "vllm-inference-server-eu-west-1-production-cluster-a-primary-00"}},
	}
	for _, st := range settings {
		t.Run(st.name, func(t *testing.T) {
			rec := &recorder{}
			src, err := tempo.New(rec.client(noTraces), "http://tempo:3200", st.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, sh := range shapes {
				// Without a known generation (as for a mixed fleet) select() holds both
				// vocabularies: V0's and V1's queries are shorter.
				for _, g := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationNone} {
					if _, _, _, err := traces.SearchAll(context.Background(), src, sh.queries(t, g), 4); err != nil {
						t.Errorf("%s, %s spans: %v", sh.name, g, err)
					}
				}
			}
			if _, err := src.Check(context.Background()); err != nil {
				t.Errorf("health check: %v", err)
			}
			longest := ""
			for _, q := range rec.sent {
				if len(q) >= tempo.MaxTraceQLBytes {
					t.Errorf("%d bytes: %s", len(q), q)
				}
				if len(q) > len(longest) {
					longest = q
				}
			}
			t.Logf("%d searches, the longest %d bytes: %s", len(rec.sent), len(longest), longest)
		})
	}
}

// liveFixture is the live Tempo's answer to a requests query's threshold search of instance
// vllm-h:8000 of a 19-instance fleet (testdata/README.md).
const (
	liveFixture    = "tempo_live_3.1_search_select_short_ok.json"
	liveInstance   = "vllm-h:8000"
	liveTypical    = 0.18614864864864866
	liveConditions = `resource.service.instance.id = "vllm-h:8000"`
)

// liveTempo answers the searches of instance vllm-h:8000 with the spans the live Tempo
// returned for it, and every other search with none: the recorded spans are that instance's
// spans above its threshold, all a search of the instance over their minutes would get from
// the live Tempo with that threshold, and a subset of what it would get without. It keeps what
// it was sent.
func liveTempo(t *testing.T) (*tempo.Source, *recorder, tracetest.Recorded) {
	t.Helper()
	rec := tracetest.LoadRecorded(t, liveFixture)
	r := &recorder{}
	src, err := tempo.New(r.client(func(q string) string {
		if strings.Contains(q, liveConditions) {
			return string(rec.Route().Body)
		}
		return noTraces(q)
	}), "http://tempo:3200", traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return src, r, rec
}

// TestTempoFleetBehaviourOnTheLiveAnswer runs a requests query and an explain query of one
// instance of a fleet, as the plugin plans and joins them, against the live Tempo's answer:
// the threshold search the plan writes is the one the live Tempo answered; the rows are that
// instance's requests, the slowest first, each standing out; the slowest one's explanation is
// compared with its peers.
func TestTempoFleetBehaviourOnTheLiveAnswer(t *testing.T) {
	src, tp, rec := liveTempo(t)
	from := time.Date(2026, 12, 2, 4, 30, 0, 0, time.UTC) // the recorded spans started at 04:33 and 04:34
	to := from.Add(10 * time.Minute)
	typical := map[string]float64{liveInstance: liveTypical, "vllm-a:8000": 0.2, "vllm-s:8000": 0.25}
	in := metricsAnswer(t, from, to, typical, nil)
	p, err := plan.NewRequests(planSettings, plan.Scope{From: from, To: to, Instance: liveInstance}, plan.RequestFilters{Limit: 100}, to)
	if err != nil {
		t.Fatal(err)
	}
	sp := p.Searches(searchInput(in)).WithGeneration(vllm.GenerationV1)
	reqs, info, _, err := traces.SearchAll(context.Background(), src, sp.Queries, 4)
	if err != nil {
		t.Fatal(err)
	}
	recConds, _, _ := strings.Cut(rec.Q, " | select(")
	if !slices.ContainsFunc(tp.sent, func(q string) bool { return strings.HasPrefix(q, recConds+" | select(") }) {
		t.Errorf("no search has the conditions the live Tempo answered, %s; sent:\n%s", recConds, strings.Join(tp.sent, "\n"))
	}
	in.Requests, in.Truncated = sp.Filter(reqs), info.Truncated
	rows, _ := correlate.Requests(in, correlate.Selection{Limit: p.Rows}, nil)
	if len(rows) != 5 {
		t.Fatalf("%d rows, want the 5 requests the live Tempo returned", len(rows))
	}
	for i, r := range rows {
		if r.Instance != liveInstance || !standsOut(r) {
			t.Errorf("row %d: instance %s, reasons %v; want %s's, standing out", i, r.Instance, r.Reasons, liveInstance)
		}
		if i > 0 && r.TTFT > rows[i-1].TTFT {
			t.Errorf("row %d: TTFT %v after %v; want the slowest first", i, r.TTFT, rows[i-1].TTFT)
		}
	}

	// Explain the slowest: its peers are searched with its vocabulary, around it, and it is
	// compared with them.
	slowest := rows[0].Request
	ex := plan.NewExplain(planSettings, plan.Scope{From: from, To: to}, slowest)
	if ex.Peers.Generation != vllm.GenerationV1 {
		t.Errorf("peers searched for %s spans, want the request's V1", ex.Peers.Generation)
	}
	around, _, err := src.Search(context.Background(), ex.Peers)
	if err != nil {
		t.Fatal(err)
	}
	others := slices.DeleteFunc(slices.Clone(around), func(r traces.Request) bool { return r.TraceID == slowest.TraceID })
	if len(others) != 4 || len(around) != 5 {
		t.Fatalf("peers: %d requests, %d others; want the instance's 5 recorded, 4 others", len(around), len(others))
	}
	res := correlate.Join(correlate.Input{Requests: around, From: slowest.Start, To: slowest.End, Set: in.Set, Typical: in.Typical}, correlate.Options{})
	i := slices.IndexFunc(res.Rows, func(r correlate.Row) bool { return r.TraceID == slowest.TraceID })
	if i < 0 {
		t.Fatal("the explained request is not among the joined rows")
	}
	e := correlate.Explain(res.Rows[i])
	lacks := slices.ContainsFunc(e.Notes, func(n string) bool { return strings.Contains(n, "the span lacks") })
	if e.Sentence == "" || lacks || !standsOut(e.Row) {
		t.Errorf("explanation %q, notes %v, reasons %v; want the explanation of a request that stands out, with every stage", e.Sentence, e.Notes, e.Row.Reasons)
	}
}

// standsOut: the row's reasons say its TTFT is well above its instance's typical one.
func standsOut(r correlate.Row) bool {
	return slices.ContainsFunc(r.Reasons, func(x correlate.Reason) bool { return x.Code == correlate.TTFTAboveTypical })
}

// TestAnswerWithoutSelectStillJoins: an answer whose spans carry only what the conditions
// matched (a query without select(), as a Tempo before 2.2 answers) still joins as requests of
// the searched instance, shown with what they carry and said to lack their latencies.
func TestAnswerWithoutSelectStillJoins(t *testing.T) {
	from := time.Date(2026, 11, 29, 8, 50, 0, 0, time.UTC)
	to := from.Add(20 * time.Minute)
	tp, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_service.json"}}, traces.Options{}, tempo.New)
	reqs, info, err := tp.Search(context.Background(), traces.Query{From: from, To: to, Instances: []string{"vllm-07:8000"}})
	if err != nil || len(reqs) == 0 {
		t.Fatalf("got %d requests, %v; want the fixture's", len(reqs), err)
	}
	in := metricsAnswer(t, from, to, map[string]float64{"vllm-07:8000": 0.2}, nil)
	in.Requests = reqs
	rows, notices := correlate.Requests(in, correlate.Selection{}, info.Notices(1, 100))
	if len(rows) != len(reqs) {
		t.Fatalf("%d rows of %d requests", len(rows), len(reqs))
	}
	for _, r := range rows {
		if r.Instance != "vllm-07:8000" || r.Model != "meta-llama/Llama-3.1-8B-Instruct" {
			t.Errorf("row %s: instance %q model %q; want the searched instance and its model from the metrics", r.TraceID, r.Instance, r.Model)
		}
	}
	if !slices.ContainsFunc(notices, func(n string) bool { return strings.Contains(n, "lack latency attributes") }) {
		t.Errorf("notices %q; want one saying the spans lack latency attributes", notices)
	}
}
