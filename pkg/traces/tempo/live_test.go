package tempo

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
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

// The answers of a live Tempo 3.1 (testdata/README.md): a threshold search of one instance of
// a simulated fleet, refused with a select() of 27 attributes and answered with one of 9.
const (
	liveRejected = "tempo_live_3.1_search_select_1057_bytes_rejected.json"
	liveAnswered = "tempo_live_3.1_search_select_short_ok.json"
	// liveInstance and liveThreshold are that search's filters.
	liveInstance  = "vllm-h:8000"
	liveThreshold = 0.558445945945946
)

// liveQuery is the search the live answers recorded, as a requests query's plan writes it for
// V1 spans: the recorded spans started within these two minutes.
func liveQuery() traces.Query {
	from := time.Unix(1796185980, 0)
	return traces.Query{From: from, To: from.Add(2 * time.Minute), Instances: []string{liveInstance}, MinTTFT: liveThreshold,
		Generation: vllm.GenerationV1}
}

// TestTempoLiveAnswer: the search the plugin sends for the recorded one has the conditions the
// live Tempo matched and asks for no attribute it was not asked for there; its answer reads as
// whole requests of that instance above the threshold.
func TestTempoLiveAnswer(t *testing.T) {
	rec := tracetest.LoadRecorded(t, liveAnswered)
	tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": rec.Route()}, traces.Options{}, New)
	reqs, info, err := tp.Search(context.Background(), liveQuery())
	if err != nil {
		t.Fatal(err)
	}
	sent := sentQueries(rp)[0]
	conds, _, _ := strings.Cut(sent, " | select(")
	recConds, _, _ := strings.Cut(rec.Q, " | select(")
	if conds != recConds {
		t.Errorf("conditions %s\nlive Tempo's %s", conds, recConds)
	}
	live := selectList(t, rec.Q)
	for _, a := range selectList(t, sent) {
		if !slices.Contains(live, a) {
			t.Errorf("select() asks for %s, which the live Tempo was not asked for", a)
		}
	}
	var body struct {
		Traces []json.RawMessage `json:"traces"`
	}
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(body.Traces) || info.Traces != len(body.Traces) || info.Incomplete != 0 {
		t.Fatalf("%d requests of %d traces, %d incomplete; want the %d recorded, complete", len(reqs), info.Traces, info.Incomplete, len(body.Traces))
	}
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, r := range reqs {
		if r.Instance != liveInstance || r.Service != "vllm" || r.TTFT < liveThreshold || !hex32.MatchString(r.TraceID) {
			t.Errorf("request %+v; want %s's, of service vllm, TTFT ≥ %v", r, liveInstance, liveThreshold)
		}
		if r.Generation() != vllm.GenerationV1 || len(r.Missing()) != 0 || r.PromptTokens == 0 || r.OutputTokens == 0 {
			t.Errorf("request %s: generation %s, missing %v, tokens %d/%d; want a whole V1 request", r.TraceID, r.Generation(), r.Missing(), r.PromptTokens, r.OutputTokens)
		}
		// The stages run on the engine's clock, e2e on the front end's: about equal.
		if sum := r.Queue + r.Prefill + r.Decode; math.Abs(sum-r.E2E) > 0.01*r.E2E {
			t.Errorf("request %s: queue + prefill + decode = %v, e2e %v; want about equal", r.TraceID, sum, r.E2E)
		}
	}
}

// TestTempoLiveRefusal: the live Tempo's 400 to the 1,057-byte query reads as its TraceQL
// parser's refusal, naming the query sent, marked downstream.
func TestTempoLiveRefusal(t *testing.T) {
	rec := tracetest.LoadRecorded(t, liveRejected)
	tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": rec.Route()}, traces.Options{}, New)
	_, info, err := tp.Search(context.Background(), liveQuery())
	sent := sentQueries(rp)[0]
	if !backend.IsDownstreamError(err) || info.Query != sent {
		t.Fatalf("err = %v, info.Query %q; want a downstream error and the query sent", err, info.Query)
	}
	for _, want := range []string{"Tempo at http://", "answered 400: Tempo's TraceQL parser refused the query " + sent + ": ",
		"parse error at line 1, col 1025: syntax error: unexpected $end", "need Tempo 2.8 or later: select() from 2.2, with(most_recent=true) parsed from 2.4 and applied from 2.8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}

// TestTempoLiveRejectedQueryNowFits: the query the live Tempo refused passed the lexer's bound;
// the one sent for the same search now, even when the spans' generation is not known (both
// vocabularies), is well under it.
func TestTempoLiveRejectedQueryNowFits(t *testing.T) {
	rec := tracetest.LoadRecorded(t, liveRejected)
	if len(rec.Q) < 1024 {
		t.Fatalf("the recorded query is %d bytes; the fixture should hold the one past 1,024", len(rec.Q))
	}
	tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{}, New)
	q := liveQuery()
	q.Generation = vllm.GenerationNone
	if _, _, err := tp.Search(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if sent := sentQueries(rp); len(sent) != 1 || len(sent[0]) >= MaxTraceQLBytes {
		t.Errorf("sent %d queries, the first %d bytes; want one under %d", len(sent), len(sent[0]), MaxTraceQLBytes)
	}
}

// TestTempoCheckSaysTheWindowAndTheNewestSpan: the health check looks a day back and says so,
// and how long ago the newest span started (the live answer moved to end 3 h 10 min ago).
func TestTempoCheckSaysTheWindowAndTheNewestSpan(t *testing.T) {
	rec := tracetest.LoadRecorded(t, liveAnswered)
	var newest int64
	for _, m := range regexp.MustCompile(`"startTimeUnixNano":\s*"(\d+)"`).FindAllStringSubmatch(string(rec.Body), -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		newest = max(newest, n)
	}
	shift := time.Now().Add(-3*time.Hour-10*time.Minute-30*time.Second).UnixNano() - newest
	moved := regexp.MustCompile(`"startTimeUnixNano":\s*"(\d+)"`).ReplaceAllStringFunc(string(rec.Body), func(s string) string {
		n, _ := strconv.ParseInt(regexp.MustCompile(`\d+`).FindString(s), 10, 64)
		return `"startTimeUnixNano": "` + strconv.FormatInt(n+shift, 10) + `"`
	})
	tp, rp := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, Body: []byte(moved)}}, traces.Options{}, New)
	h, err := tp.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !h.VLLMSpans || !strings.Contains(h.Message, "in the last 24 hours; the newest found started 3 h 10 min ago") {
		t.Errorf("Check = %+v", h)
	}
	sent := rp.Requests()[0].URL.Query()
	start, _ := strconv.ParseInt(sent.Get("start"), 10, 64)
	end, _ := strconv.ParseInt(sent.Get("end"), 10, 64)
	if end-start < int64(traces.CheckWindow/time.Second) {
		t.Errorf("searched %d s, want the last %v", end-start, traces.CheckWindow)
	}

	empty, _ := tracetest.Start(t, map[string]tracetest.Route{"/api/search": {Status: 200, File: "tempo_api_search_traceql_ttft_gt_int_1_empty.json"}}, traces.Options{}, New)
	if h, err := empty.Check(context.Background()); err != nil || h.VLLMSpans || !strings.Contains(h.Message, `no span "llm_request" of service "vllm" in the last 24 hours`) {
		t.Errorf("Check without spans = %+v, %v", h, err)
	}
}
