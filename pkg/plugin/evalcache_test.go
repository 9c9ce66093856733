package plugin

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// promQueries reads how many queries a real Prometheus has evaluated, from its own metrics.
func promQueries(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, `prometheus_engine_query_duration_seconds_count{slice="inner_eval"}`) {
			n, err := strconv.ParseFloat(strings.Fields(line)[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("Prometheus exports no prometheus_engine_query_duration_seconds_count")
	return 0
}

func sharedMark(f *data.Frame) bool {
	if f.Meta == nil {
		return false
	}
	c, _ := f.Meta.Custom.(map[string]any)
	shared, _ := c["sharedEvaluation"].(bool)
	return shared
}

// The panels of one dashboard refresh (headline, findings, timeline, annotations) and the alert
// format ask for the same evaluation: Prometheus sees the queries of one, and each answer says
// it was shared.
func TestOneEvaluationPerRefresh(t *testing.T) {
	end := time.Now().Truncate(scrape)
	prom := testbed.Prometheus(t, fleet{generation: vllm.GenerationV1, end: end, span: dataSpan, instances: []server{serverA, serverB}}.write(t))
	e := &env{end: end, client: grpcPlugin(t)}
	diag := func(_, format string) map[string]any {
		return map[string]any{"queryType": "diagnosis", "format": format}
	}

	before := promQueries(t, prom.URL)
	res := e.query(t, pluginContext(prom.URL, nil), e.dataQuery("A", diag("A", "findings")))
	alone := promQueries(t, prom.URL) - before
	if alone == 0 {
		t.Fatal("a diagnosis ran no Prometheus query")
	}
	for _, f := range res.Responses["A"].Frames {
		if sharedMark(f) {
			t.Errorf("a query answered alone is marked shared")
		}
	}

	before = promQueries(t, prom.URL)
	refresh := e.query(t, pluginContext(prom.URL, nil),
		e.dataQuery("headline", diag("headline", "findings")), e.dataQuery("findings", diag("findings", "findings")),
		e.dataQuery("timeline", diag("timeline", "timeline")), e.dataQuery("alerts", diag("alerts", "alert")))
	if got := promQueries(t, prom.URL) - before; got != alone {
		t.Errorf("four panels of one refresh ran %d Prometheus queries, one evaluation runs %d", got, alone)
	}
	for ref, r := range refresh.Responses {
		if r.Error != nil {
			t.Fatalf("%s: %v", ref, r.Error)
		}
		if len(r.Frames) == 0 || !sharedMark(r.Frames[0]) {
			t.Errorf("%s: answer not marked as shared", ref)
		}
	}
}

func TestEvalCacheExpiresAndStaysBounded(t *testing.T) {
	var runs atomic.Int32
	compute := func(context.Context) (*Diagnosis, error) {
		runs.Add(1)
		return &Diagnosis{EvaluatedAt: time.Now()}, nil
	}
	key := func(i int) evalKey {
		return newEvalKey(nil, nil, strconv.Itoa(i), "", time.Minute, time.Unix(0, 0), time.Unix(3600, 0))
	}

	c := newEvalCache(50 * time.Millisecond)
	if _, shared, _ := c.get(context.Background(), key(0), compute); shared {
		t.Error("first answer marked shared")
	}
	if _, shared, _ := c.get(context.Background(), key(0), compute); !shared || runs.Load() != 1 {
		t.Errorf("second ask within the TTL: shared %v, %d evaluations; want shared, 1", shared, runs.Load())
	}
	// An idle cache lets its evaluation go once it expires, without waiting for another put.
	entries := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.entries)
	}
	for deadline := time.Now().Add(5 * time.Second); entries() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := entries(); n != 0 {
		t.Errorf("an idle cache still holds %d evaluations after their TTL", n)
	}
	if _, _, _ = c.get(context.Background(), key(0), compute); runs.Load() != 2 {
		t.Errorf("after the TTL: %d evaluations, want 2", runs.Load())
	}

	c = newEvalCache(time.Hour)
	for i := range 3 * maxEvaluations {
		_, _, _ = c.get(context.Background(), key(i), compute)
	}
	if n := len(c.entries); n > maxEvaluations {
		t.Errorf("%d entries kept, at most %d", n, maxEvaluations)
	}

	failing := func(context.Context) (*Diagnosis, error) { runs.Add(1); return nil, errors.New("down") }
	runs.Store(0)
	_, _, _ = c.get(context.Background(), key(-1), failing)
	_, _, _ = c.get(context.Background(), key(-1), failing)
	if runs.Load() != 2 {
		t.Errorf("an error was kept: %d evaluations for two asks, want 2", runs.Load())
	}
}
