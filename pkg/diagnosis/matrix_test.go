package diagnosis

import (
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Each rule just below, at and above each of its thresholds, held for the whole evaluated range
// (10 minutes, longer than every `for`). want is the finding's severity, "" for none.
func TestRuleThresholdEdges(t *testing.T) {
	type m = map[series.Signal]sample
	cases := []struct {
		name  string
		rule  string
		after m
		th    Thresholds
		want  Severity
	}{
		{"healthy server", KVCacheSaturated, m{}, nil, ""},

		{"requests held with no step and no token", EngineStalled, stalled(nil), nil, Critical},
		{"a queue alone, nothing running, no step", EngineStalled, stalled(m{series.Running: x(0)}), nil, Critical},
		{"an idle instance takes no step", EngineStalled, stalled(m{series.Running: x(0), series.Waiting: x(0)}), nil, ""},
		{"steps advancing without a token (prefills) are progress", EngineStalled, stalled(m{series.EngineStepRate: x(0.5)}), nil, ""},
		{"tokens generated are progress", EngineStalled, stalled(m{series.GenerationTPS: x(0.1)}), nil, ""},
		{"a step counter without a sample leaves the step unknown", EngineStalled, stalled(m{series.EngineStepRate: nan()}), nil, ""},
		{"a scrape gap: no rate and no gauge", EngineStalled,
			m{series.Running: nan(), series.Waiting: nan(), series.GenerationTPS: nan(), series.EngineStepRate: nan()}, nil, ""},
		{"a restart's window: gauges scraped, rates not yet", EngineStalled,
			stalled(m{series.GenerationTPS: nan(), series.EngineStepRate: nan()}), nil, ""},

		{"kv usage above 0.85 with preemptions", KVCacheSaturated, m{series.KVUsage: x(0.86), series.PreemptionRate: x(1)}, nil, Critical},
		{"kv usage at 0.85 is not above it", KVCacheSaturated, m{series.KVUsage: x(0.85), series.PreemptionRate: x(1)}, nil, ""},
		{"kv usage below 0.85", KVCacheSaturated, m{series.KVUsage: x(0.84), series.PreemptionRate: x(1)}, nil, ""},
		{"preemption rate at 0.5/s is not above it", KVCacheSaturated, m{series.KVUsage: x(0.97), series.PreemptionRate: x(0.5)}, nil, ""},
		{"preemption rate above 0.5/s", KVCacheSaturated, m{series.KVUsage: x(0.97), series.PreemptionRate: x(0.51)}, nil, Critical},
		{"kv usage override raises the bar", KVCacheSaturated, m{series.KVUsage: x(0.9), series.PreemptionRate: x(1)},
			Thresholds{KVCacheSaturated: {"kv_usage": 0.95}}, ""},

		{"preemptions above 1/min with free cache", PreemptionsFreeCache, m{series.PreemptionRate: x(0.05), series.KVUsageAvg: x(0.6)}, nil, Warning},
		{"preemptions at 1/min are not above it", PreemptionsFreeCache, m{series.PreemptionRate: x(1.0 / 60), series.KVUsageAvg: x(0.6)}, nil, ""},
		{"preemptions below 1/min", PreemptionsFreeCache, m{series.PreemptionRate: x(0.01), series.KVUsageAvg: x(0.6)}, nil, ""},
		{"preemptions with kv usage at 0.90 is not free cache", PreemptionsFreeCache, m{series.PreemptionRate: x(0.05), series.KVUsageAvg: x(0.9)}, nil, ""},
		{"preemptions at a full gauge with the window's mean usage free", PreemptionsFreeCache, m{series.PreemptionRate: x(0.05), series.KVUsage: x(1), series.KVUsageAvg: x(0.6)}, nil, Warning},
		{"preemptions with kv usage just below 0.90", PreemptionsFreeCache, m{series.PreemptionRate: x(0.05), series.KVUsageAvg: x(0.89)}, nil, Warning},
		{"preemptions per minute override at the value", PreemptionsFreeCache, m{series.PreemptionRate: x(0.0625), series.KVUsageAvg: x(0.6)},
			Thresholds{PreemptionsFreeCache: {"preemptions_per_minute": 3.75}}, ""},

		{"queue above 20% with free cache", QueueWithFreeCache, m{series.Running: x(8), series.Waiting: x(3), series.KVUsage: x(0.4)}, nil, Warning},
		{"queue at 20% is not above it", QueueWithFreeCache, m{series.Running: x(8), series.Waiting: x(2), series.KVUsage: x(0.4)}, nil, ""},
		{"queue below 20%", QueueWithFreeCache, m{series.Running: x(8), series.Waiting: x(1), series.KVUsage: x(0.4)}, nil, ""},
		{"queue with kv usage at 0.70 is not free cache", QueueWithFreeCache, m{series.Running: x(8), series.Waiting: x(3), series.KVUsage: x(0.7)}, nil, ""},
		{"queue with kv usage just below 0.70", QueueWithFreeCache, m{series.Running: x(8), series.Waiting: x(3), series.KVUsage: x(0.69)}, nil, Warning},
		{"queue of deferred requests only is not a budget problem", QueueWithFreeCache,
			m{series.Running: x(8), series.Waiting: x(3), series.WaitingCapacity: x(0), series.KVUsage: x(0.4)}, nil, ""},
		{"idle server has no queue", QueueWithFreeCache, m{series.Running: x(0), series.Waiting: x(0), series.KVUsage: x(0)}, nil, ""},

		{"deferred above 20% with free cache", QueueDeferred,
			m{series.Running: x(8), series.Waiting: x(4), series.WaitingDeferred: x(3), series.WaitingCapacity: x(1), series.KVUsage: x(0.4)}, nil, Warning},
		{"deferred at 20% is not above it", QueueDeferred,
			m{series.Running: x(8), series.Waiting: x(2), series.WaitingDeferred: x(2), series.WaitingCapacity: x(0), series.KVUsage: x(0.4)}, nil, ""},
		{"deferred with kv usage at 0.85", QueueDeferred,
			m{series.Running: x(8), series.Waiting: x(4), series.WaitingDeferred: x(3), series.WaitingCapacity: x(1), series.KVUsage: x(0.85)}, nil, ""},
		{"a queue waiting for capacity is not deferred", QueueDeferred,
			m{series.Running: x(8), series.Waiting: x(4), series.WaitingDeferred: x(0), series.WaitingCapacity: x(4), series.KVUsage: x(0.4)}, nil, ""},
		{"a vLLM that reports no reason defers nothing", QueueDeferred, m{series.Running: x(8), series.Waiting: x(4), series.KVUsage: x(0.4)}, nil, ""},
		{"idle server defers nothing", QueueDeferred,
			m{series.Running: x(0), series.Waiting: x(0), series.WaitingDeferred: x(0), series.KVUsage: x(0)}, nil, ""},

		{"queue with kv usage at 0.85 is past the knee", PastTheKnee, m{series.Running: x(8), series.Waiting: x(3), series.KVUsage: x(0.85)}, nil, Critical},
		{"queue with kv usage just below 0.85", PastTheKnee, m{series.Running: x(8), series.Waiting: x(3), series.KVUsage: x(0.84)}, nil, ""},
		{"full cache with the queue at 20%", PastTheKnee, m{series.Running: x(8), series.Waiting: x(2), series.KVUsage: x(0.95)}, nil, ""},

		{"aborts above 5%", ClientTimeouts, m{series.AbortRatio: x(0.06)}, nil, Critical},
		{"aborts at 5% are not above it", ClientTimeouts, m{series.AbortRatio: x(0.05)}, nil, ""},
		{"aborts below 5%", ClientTimeouts, m{series.AbortRatio: x(0.04)}, nil, ""},

		{"length share above 0.2 and its baseline", OutputsTruncated, m{series.LengthRatio: x(0.21)}, nil, Warning},
		{"length share at 0.2 is not above it", OutputsTruncated, m{series.LengthRatio: x(0.2)}, nil, ""},
		{"no finished request: no share", OutputsTruncated, m{series.LengthRatio: nan()}, nil, ""},
		{"length share override lowers the bar", OutputsTruncated, m{series.LengthRatio: x(0.1)},
			Thresholds{OutputsTruncated: {"length_ratio": 0.05}}, Warning},

		{"acceptance just below 0.6 is a warning", SpecDecodeInefficient, m{series.SpecAcceptanceRate: x(0.59)}, nil, Warning},
		{"acceptance at 0.6 is fine", SpecDecodeInefficient, m{series.SpecAcceptanceRate: x(0.6)}, nil, ""},
		{"acceptance at 0.5 is still a warning", SpecDecodeInefficient, m{series.SpecAcceptanceRate: x(0.5)}, nil, Warning},
		{"acceptance below 0.5 is critical", SpecDecodeInefficient, m{series.SpecAcceptanceRate: x(0.49)}, nil, Critical},

		{"TTFT p99/p50 certainly above 2", PrefillBlocking, m{series.TTFTP99: qb(0.55, 0.502, 0.75)}, nil, Warning},
		// p99 > 0.5 and p50 ≤ 0.25: the ratio is certainly above 2.
		{"TTFT p99/p50 bounds at exactly 2", PrefillBlocking, m{series.TTFTP99: qb(0.6, 0.5, 0.75)}, nil, Warning},
		{"TTFT p99/p50 bounds just below 2", PrefillBlocking, m{series.TTFTP99: qb(0.6, 0.498, 0.75)}, nil, ""},

		{"TTFT p50 above 0.5 s and hit rate below 0.5", PrefixCacheMiss, m{series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(0.3)}, nil, Warning},
		// A quantile in (0.5, 0.75] is certainly above 0.5 s.
		{"TTFT p50 bucket starting at 0.5 s is above it", PrefixCacheMiss, m{series.TTFTP50: qb(0.6, 0.5, 0.75), series.PrefixCacheHitRate: x(0.3)}, nil, Warning},
		{"TTFT p50 interpolated above a 0.6 s threshold inside (0.5, 0.75] is uncertain", PrefixCacheMiss,
			m{series.TTFTP50: qb(0.7, 0.5, 0.75), series.PrefixCacheHitRate: x(0.3)}, Thresholds{PrefixCacheMiss: {"ttft_p50": 0.6}}, ""},
		{"hit rate at 0.5 is not below it", PrefixCacheMiss, m{series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(0.5)}, nil, ""},
		{"hit rate just below 0.5", PrefixCacheMiss, m{series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(0.49)}, nil, Warning},

		{"TTFT p99 at twice the baseline with prefill 1.5×", PrefillBound, m{series.TTFTP99: qb(1.5, 1, 2.5), series.PrefillTimeMean: x(0.75)}, nil, Warning},
		{"TTFT p99 just under twice the baseline", PrefillBound, m{series.TTFTP99: qb(1.2, 0.99, 2.5), series.PrefillTimeMean: x(0.75)}, nil, ""},
		{"TTFT p99 doubled but prefill time flat", PrefillBound, m{series.TTFTP99: qb(1.5, 1, 2.5), series.PrefillTimeMean: x(0.74)}, nil, ""},

		{"TPOT p99 at twice the baseline with decode 1.5×", DecodeBound, m{series.TPOTP99: qb(0.12, 0.1, 0.15), series.DecodeTimeMean: x(3)}, nil, Warning},
		{"TPOT p99 just under twice the baseline", DecodeBound, m{series.TPOTP99: qb(0.12, 0.099, 0.15), series.DecodeTimeMean: x(3)}, nil, ""},
		{"TPOT p99 doubled but decode time flat", DecodeBound, m{series.TPOTP99: qb(0.12, 0.1, 0.15), series.DecodeTimeMean: x(2.9)}, nil, ""},

		{"TTFT and prefill up 1.5× with a short queue and free cache", TokenBudgetStarved, starved(nil), nil, Warning},
		{"TTFT p50 just under 1.5× its baseline", TokenBudgetStarved, starved(m{series.TTFTP50: qb(0.4, 0.374, 0.5)}), nil, ""},
		{"prefill time just under 1.5× its baseline", TokenBudgetStarved, starved(m{series.PrefillTimeMean: x(0.74)}), nil, ""},
		{"queue time at the prefill time", TokenBudgetStarved, starved(m{series.QueueTimeMean: x(0.75)}), nil, ""},
		{"kv usage at 0.85", TokenBudgetStarved, starved(m{series.KVUsage: x(0.85)}), nil, ""},
		{"any preemption", TokenBudgetStarved, starved(m{series.PreemptionRate: x(0.01)}), nil, ""},
		{"prompts 1.5× longer explain the slower prefill", TokenBudgetStarved, starved(m{series.PromptLengthMean: x(1500)}), nil, ""},
		{"prompts just under 1.5× longer", TokenBudgetStarved, starved(m{series.PromptLengthMean: x(1499)}), nil, Warning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, c.after)
			res := evaluate(t, set, Options{Rules: []string{c.rule}, Thresholds: c.th, EvalFrom: evalFrom})
			got := findingsOf(res, c.rule)
			switch {
			case c.want == "" && len(got) != 0:
				t.Fatalf("want no finding, got %q", got[0].Text)
			case c.want != "" && len(got) != 1:
				t.Fatalf("want one finding, got %d; states %v", len(got), statesOf(t, res, keyA, c.rule)[:3])
			case c.want != "" && got[0].Severity != c.want:
				t.Fatalf("severity %s, want %s", got[0].Severity, c.want)
			}
		})
	}
}

// stalled is engine_stalled's condition: requests running and waiting, no engine step and no
// generated token over the window, with changes.
func stalled(change map[series.Signal]sample) map[series.Signal]sample {
	m := map[series.Signal]sample{
		series.Running:        x(8),
		series.Waiting:        x(12),
		series.GenerationTPS:  x(0),
		series.EngineStepRate: x(0),
		series.RequestRate:    x(0),
	}
	for k, v := range change {
		m[k] = v
	}
	return m
}

// starved is token_budget_starved's condition exactly at its thresholds (TTFT bounds 1.5× the
// baseline's upper bounds 0.25 and 0.5 s, prefill 1.5× 0.5 s), with changes.
func starved(change map[series.Signal]sample) map[series.Signal]sample {
	m := map[series.Signal]sample{
		series.TTFTP50:         qb(0.4, 0.375, 0.5),
		series.TTFTP99:         qb(0.8, 0.75, 1),
		series.PrefillTimeMean: x(0.75),
		series.QueueTimeMean:   x(0.1),
	}
	for k, v := range change {
		m[k] = v
	}
	return m
}

// The rules of README's matrix table are in the matrix, each with its `for`.
func TestMatrixHasEveryRowOfTheReadme(t *testing.T) {
	want := map[string]string{
		EngineStalled: "1m30s", PrefillBlocking: "5m", TokenBudgetStarved: "5m", PrefixCacheMiss: "5m", SpecDecodeInefficient: "5m",
		KVCacheSaturated: "3m", PreemptionsFreeCache: "5m", QueueWithFreeCache: "5m", QueueDeferred: "5m", PastTheKnee: "5m",
		ClientTimeouts: "5m", OutputsTruncated: "5m", PrefillBound: "5m", DecodeBound: "5m",
	}
	for id, forDur := range want {
		rules, err := Rules([]string{id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := duration(rules[0].For); got != forDur {
			t.Errorf("%s: for %s, want %s", id, got, forDur)
		}
	}
}

func hasFlagOrStep(action string) bool {
	for _, s := range []string{"--", "instances", "other findings"} {
		if strings.Contains(action, s) {
			return true
		}
	}
	return false
}

// Where vLLM has no per-request TPOT histogram (V0), decode_bound compares the mean time per
// output token with its baseline, since V0's per-token histogram holds every inter-token gap.
func TestDecodeBoundWithoutPerRequestTPOT(t *testing.T) {
	type m = map[series.Signal]sample
	cases := []struct {
		name       string
		after      m
		want       Severity
		applicable bool
	}{
		{"mean TPOT at twice the baseline with decode 1.5×", m{series.TPOTMean: x(0.04), series.DecodeTimeMean: x(3)}, Warning, true},
		{"mean TPOT just under twice the baseline", m{series.TPOTMean: x(0.0399), series.DecodeTimeMean: x(3)}, "", true},
		{"mean TPOT doubled but decode time flat", m{series.TPOTMean: x(0.04), series.DecodeTimeMean: x(2.9)}, "", true},
		{"no TPOT of any kind", nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			for sig, s := range healthy() {
				if sig != series.TPOTP99 {
					fill(set, keyA, sig, 0, set.Grid.Len, s)
				}
			}
			if c.applicable {
				fill(set, keyA, series.TPOTMean, 0, set.Grid.Len, x(0.02))
			}
			for sig, s := range c.after {
				fill(set, keyA, sig, baseSteps, set.Grid.Len, s)
			}
			res := evaluate(t, set, Options{Rules: []string{DecodeBound}, EvalFrom: evalFrom})
			got := findingsOf(res, DecodeBound)
			switch {
			case c.want == "" && len(got) != 0:
				t.Fatalf("want no finding, got %q", got[0].Text)
			case c.want != "" && (len(got) != 1 || got[0].Severity != c.want):
				t.Fatalf("want one %s finding, got %d; states %v", c.want, len(got), statesOf(t, res, keyA, DecodeBound)[:3])
			}
			if na := count(statesOf(t, res, keyA, DecodeBound), NotApplicable) > 0; na == c.applicable {
				t.Errorf("not applicable: %v, want %v", na, !c.applicable)
			}
		})
	}
}
