package e2e_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/stack"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// burnFleetSize is the fleet of the burn-rate test: two healthy instances per model, and faults
// on vllm-01 (kv_cache_saturated), vllm-03 (spec_decode_inefficient, which leaves TTFT alone) and
// vllm-05 (prefix_cache_miss).
const burnFleetSize = 6

// TestSLOBurnAlertRules evaluates each provisioned objective's alert rule (vllm-slo-rules.yaml)
// as Grafana would, on a simulated fleet 75 minutes into its run, half an hour into its faults:
// the query the rule runs over its relative time range, reduce last, > 0. The ground truth is
// the simulator's per-request record: the burn rates of the injected TTFTs and finish reasons
// over each window pair, against the pair's factor for the provisioned objective. The rule fires
// on the instances whose injected requests burn the budget, naming the injected fault's finding
// in top_rule, and stays at 0 on the healthy ones.
func TestSLOBurnAlertRules(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: simulates a fleet and starts Prometheus")
	}
	sc, err := sim.Fleet(burnFleetSize)
	require.NoError(t, err)
	res, err := sim.Run(sc, runStart, runFor, scrape)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, res.WriteFile(file))
	prom := testbed.Prometheus(t, file)
	raw, err := stack.ProvisionedSLOs("vllm")
	require.NoError(t, err)
	objectives, err := slo.Parse(raw)
	require.NoError(t, err)
	byName := map[string]slo.Objective{}
	for _, o := range objectives {
		byName[o.Name] = o
	}
	var slos []map[string]any
	require.NoError(t, json.Unmarshal(raw, &slos))
	tp, pc := pluginFor(t, prom.URL, map[string]any{"scrapeInterval": scrape.String(), "slos": slos})
	faulty := sim.FleetFaulty(burnFleetSize)
	at := runStart.Add(75 * time.Minute)

	rules, err := stack.LoadAlertRules(filepath.Join(stack.RepoRoot(), "provisioning", "alerting", "vllm-slo-rules.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, rules)
	burning := 0
	for _, r := range rules {
		t.Run(r.Title, func(t *testing.T) {
			a := r.Data[0]
			rawQ, err := json.Marshal(a.Model)
			require.NoError(t, err)
			parsed, err := stack.DecodeRequestQuery(rawQ)
			require.NoError(t, err)
			require.IsType(t, plugin.SLOQuery{}, parsed)
			q := parsed.(plugin.SLOQuery)
			o := byName[q.SLOs[0]]
			window := time.Duration(a.RelativeTimeRange.From-a.RelativeTimeRange.To) * time.Second
			ms, _ := a.Model["intervalMs"].(float64)
			resp := ask(t, tp, pc, query(a.RefID, a.Model, at.Add(-window), at, time.Duration(ms)*time.Millisecond))
			out := resp.Responses[a.RefID]
			require.NoError(t, out.Error)
			last, top := map[string]float64{}, map[string]string{}
			for _, f := range out.Frames {
				if len(f.Fields) < 2 || f.Fields[1].Len() == 0 {
					continue
				}
				v := f.Fields[1]
				require.Equal(t, string(q.Severity), v.Labels["severity"], "the rule's series are of its severity only")
				last[v.Labels["instance"]] = lastValue(f.Fields[1].Len(), func(i int) (float64, bool) {
					x, ok := v.ConcreteAt(i)
					if !ok {
						return 0, false
					}
					return x.(float64), true
				})
				top[v.Labels["instance"]] = v.Labels["top_rule"]
			}
			require.Len(t, last, burnFleetSize, "one series per instance")
			for _, in := range sc.Instances {
				fires, decided := injectedBurn(res.Spans, in.Address, o, q.Severity, at)
				got := last[in.Address]
				t.Logf("%s on %s (fault %q): last value %.2f, top_rule %q; injected: fires %v (decided %v)",
					o.Name, in.Address, faulty[in.Address], got, top[in.Address], fires, decided)
				if _, isFaulty := faulty[in.Address]; !isFaulty {
					assert.Zero(t, got, "%s fires on the healthy %s", r.Title, in.Address)
					continue
				}
				if !decided {
					continue
				}
				if fires {
					burning++
					assert.Greater(t, got, 0.0, "%s should fire on %s, whose injected requests burn the budget", r.Title, in.Address)
					assert.Equal(t, faulty[in.Address], top[in.Address], "%s on %s: top_rule should name the injected fault's finding", r.Title, in.Address)
				} else {
					assert.Zero(t, got, "%s fires on %s, whose injected requests do not burn the budget", r.Title, in.Address)
				}
			}
		})
	}
	assert.Positive(t, burning, "no rule had an instance whose injected requests burn its budget: the test checks no firing")
}

// lastValue is the last value of n that is not null or NaN, as Grafana's reduce (last, dropNN)
// takes it; NaN when there is none.
func lastValue(n int, at func(int) (float64, bool)) float64 {
	for i := n - 1; i >= 0; i-- {
		if x, ok := at(i); ok && !math.IsNaN(x) {
			return x
		}
	}
	return math.NaN()
}

// injectedBurn says whether an instance's requests as the simulator recorded them make a
// severity's burn-rate condition hold at t (each pair's factor scaled to the objective's
// window): TTFT objectives count requests by when their first token came and miss above the
// threshold; availability counts them by when they finished and misses aborts and errors.
// decided is false unless a pair clearly holds (both burn rates 25 % above its factor) or every
// pair clearly fails (one of them 25 % below): closer calls than that depend on the metrics' rate
// windows and the requests' timing.
func injectedBurn(spans []sim.Span, instance string, o slo.Objective, sev slo.BurnSeverity, t time.Time) (fires, decided bool) {
	burn := func(d time.Duration) float64 {
		var total, bad float64
		for _, sp := range spans {
			if sp.Instance != instance {
				continue
			}
			var when time.Time
			var miss bool
			switch o.Indicator {
			case slo.TTFT:
				if sp.TTFT <= 0 {
					continue
				}
				when, miss = sp.Start.Add(time.Duration(sp.TTFT*float64(time.Second))), sp.TTFT > o.Threshold
			case slo.Availability:
				when, miss = sp.End, sp.FinishReason == "abort" || sp.FinishReason == "error"
			default:
				panic(fmt.Sprintf("no ground truth for indicator %s", o.Indicator))
			}
			if !when.After(t.Add(-d)) || when.After(t) {
				continue
			}
			total++
			if miss {
				bad++
			}
		}
		if total == 0 {
			return 0
		}
		return bad / total / (1 - o.Target)
	}
	clearlyFires, clearlyQuiet := false, true
	for _, p := range slo.BurnPairs {
		if p.Severity != sev {
			continue
		}
		f := p.FactorFor(o)
		long, short := burn(p.Long), burn(p.Short)
		fires = fires || (long > f && short > f)
		clearlyFires = clearlyFires || (long > f*1.25 && short > f*1.25)
		clearlyQuiet = clearlyQuiet && (long < f/1.25 || short < f/1.25)
	}
	return fires, clearlyFires || clearlyQuiet
}
