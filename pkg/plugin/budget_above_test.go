package plugin

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// TestBudgetAboveNeedPointsAtMaxNumSeqs is issue 26's acceptance on a token budget already above
// the value queue_with_free_cache computes (sim's budget_above_need, through a real Prometheus
// and the plugin over gRPC): the advice never raises --max-num-batched-tokens to a value below
// the configured one; it says that steps already take more tokens than needed and points at
// --max-num-seqs, which binds. The configured values are the simulator's, not the metrics'.
func TestBudgetAboveNeedPointsAtMaxNumSeqs(t *testing.T) {
	sc, err := sim.Lookup(sim.BudgetAboveNeed)
	if err != nil {
		t.Fatal(err)
	}
	fault := sc.Instances[1].Faults[0]
	if sc.Instances[1].Address != sim.FaultyInstance || fault.Engine == nil {
		t.Fatalf("%s's second instance should be %s redeployed with other flags", sim.BudgetAboveNeed, sim.FaultyInstance)
	}
	budget, seats := float64(fault.Engine.MaxNumBatchedTokens), float64(fault.Engine.MaxNumSeqs)
	start := time.Now().Add(-90 * time.Minute).Truncate(time.Minute)
	prom := testbed.Prometheus(t, writeRun(t, sim.BudgetAboveNeed, sc, start, time.Hour))
	raw, _ := json.Marshal(map[string]any{"queryType": QueryTypeDiagnosis, "rules": []string{"queue_with_free_cache"}, "instance": sim.FaultyInstance})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := grpcPlugin(t).QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginContext(prom.URL, nil), Queries: []backend.DataQuery{{
		RefID: "A", QueryType: string(QueryTypeDiagnosis), JSON: raw, Interval: scrape, MaxDataPoints: 43200,
		TimeRange: backend.TimeRange{From: start, To: start.Add(time.Hour)}}}})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	r := res.Responses["A"]
	if r.Error != nil || len(r.Frames) == 0 {
		t.Fatalf("query failed: %v", r.Error)
	}
	f := r.Frames[0]
	col := func(name string, i int) any {
		fld, _ := f.FieldByName(name)
		if fld == nil {
			t.Fatalf("the findings frame lacks %s", name)
		}
		return fld.At(i)
	}
	number := func(name string, i int) *float64 {
		v, _ := col(name, i).(*float64)
		return v
	}
	computed := regexp.MustCompile(`computed (\d+)`)
	seqs := regexp.MustCompile(`raise --max-num-seqs to (\d+)`)
	found := 0
	for i := 0; i < f.Rows(); i++ {
		if col("rule", i) != "queue_with_free_cache" || col("instance", i) != sim.FaultyInstance {
			continue
		}
		found++
		sentence, _ := col("recommendation", i).(string)
		t.Logf("advice: %s", sentence)
		if col("flag", i) != "--max-num-batched-tokens" {
			t.Errorf("flag %v, want --max-num-batched-tokens", col("flag", i))
		}
		if rec := number("recommended", i); rec != nil {
			t.Errorf("recommended %v: want no value, the budget already being above need", *rec)
		}
		if strings.Contains(sentence, "raise --max-num-batched-tokens") || strings.Contains(sentence, "as a target") || !strings.Contains(sentence, "no change") {
			t.Errorf("the advice changes the budget, configured at %.0f: %s", budget, sentence)
		}
		if m := computed.FindStringSubmatch(sentence); m == nil {
			t.Errorf("the advice does not state the value it computed: %s", sentence)
		} else if v, _ := strconv.ParseFloat(m[1], 64); v >= budget {
			t.Errorf("computed %v, not below the configured budget %.0f: the scenario does not test what it says", v, budget)
		}
		if m := seqs.FindStringSubmatch(sentence); m == nil {
			t.Errorf("the advice does not point at --max-num-seqs: %s", sentence)
		} else if v, _ := strconv.ParseFloat(m[1], 64); v <= seats {
			t.Errorf("raise --max-num-seqs to %v, not above its configured %.0f", v, seats)
		}
		if cur := number("current", i); cur != nil && *cur > budget {
			t.Errorf("current budget %v above the configured %.0f", *cur, budget)
		}
	}
	if found == 0 {
		t.Fatalf("no queue_with_free_cache finding on %s", sim.FaultyInstance)
	}
}
