package diagnosis

import (
	"math"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
)

// recomputeLoad is a step under preemption: 2 preemptions a second of 1000-token prompts
// (R = 2000 tokens/s), 4000 tokens looked up a second of which 1500 are prompt tokens processed.
func recomputeLoad(over map[series.Signal]sample) map[series.Signal]sample {
	m := map[series.Signal]sample{
		series.PrefixCacheHitRate: x(0.6), series.PreemptionRate: x(2), series.PromptLengthMean: x(1000),
		series.PrefixCacheQueryTPS: x(4000), series.PromptTPS: x(1500),
	}
	for s, v := range over {
		m[s] = v
	}
	return m
}

func TestFirstHitRateDiscountsRecomputes(t *testing.T) {
	cases := []struct {
		name      string
		step      map[series.Signal]sample
		th        Thresholds
		want      float64
		recompute float64
	}{
		// (0.6 × 4000 − 0.75 × 2000) / (4000 − 2000)
		{"recomputes counted with the lookups", recomputeLoad(nil), nil, 0.45, 2000},
		{"no preemption: the rate as counted", recomputeLoad(map[series.Signal]sample{series.PreemptionRate: x(0)}), nil, 0.6, 0},
		// A vLLM that counts recomputes apart looks up only the prompt tokens it processes.
		{"no lookup beyond the prompt tokens: nothing to discount", recomputeLoad(map[series.Signal]sample{series.PrefixCacheQueryTPS: x(1500)}), nil, 0.6, 0},
		// R is at most 2500 − 1500: (0.6 × 2500 − 0.75 × 1000) / 1500
		{"R at most the lookups beyond the prompt tokens", recomputeLoad(map[series.Signal]sample{series.PrefixCacheQueryTPS: x(2500)}), nil, 0.5, 1000},
		// V0 exports no lookups: they are the prompt tokens processed plus R, 3500 + 2000.
		{"without the lookups' counter", recomputeLoad(map[series.Signal]sample{series.PrefixCacheQueryTPS: nan(), series.PromptTPS: x(3500)}), nil,
			(0.6*5500 - 0.75*2000) / 3500, 2000},
		{"clamped at 0", recomputeLoad(map[series.Signal]sample{series.PrefixCacheHitRate: x(0.3)}), nil, 0, 2000},
		{"no prompt length: the rate as counted", recomputeLoad(map[series.Signal]sample{series.PromptLengthMean: nan()}), nil, 0.6, 0},
		// (0.6 × 4000 − 0.5 × 2000) / 2000
		{"recompute_hit_share overridden", recomputeLoad(nil), Thresholds{PrefixCacheMiss: {recomputeHitShareParam: 0.5}}, 0.7, 2000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(1)
			for s, v := range c.step {
				fill(set, keyA, s, 0, 1, v)
			}
			rules, err := Rules([]string{PrefixCacheMiss}, c.th)
			if err != nil {
				t.Fatal(err)
			}
			h := firstHitRate(&env{set: set, key: keyA, rule: &rules[0]}, 0)
			if math.Abs(h.value-c.want) > 1e-9 || math.Abs(h.recompute-c.recompute) > 1e-9 {
				t.Fatalf("first-time hit rate %v with R %v, want %v with R %v", h.value, h.recompute, c.want, c.recompute)
			}
		})
	}
}

// A hit rate of 0.6 (0.55) counted is above hit_rate, but 0.45 (0.42) of first-time lookups is
// below it: the finding comes from the discount, says so, and its recommendation starts from it.
func TestRecomputesDoNotHideAPrefixMiss(t *testing.T) {
	cases := []struct {
		name, derived, text string
		current             float64 // the recommendation's hit rate now, 0: no finding
		after               map[series.Signal]sample
	}{
		{"recomputes discounted below hit_rate",
			"prefix-cache hit rate 0.6 counted, 0.45 of first-time lookups: 2 preemptions/s × 1000 prompt tokens = 2000 of 4000 tokens looked up per second discounted as recomputes, 0.75 of them as hits",
			"prefix-cache hit rate 0.45 of first-time lookups (0.6 counted)", 0.45,
			recomputeLoad(map[series.Signal]sample{series.TTFTP50: qb(0.8, 0.75, 1)})},
		// (0.55 × 2500 − 0.75 × 1000) / 1500
		{"R bounded by the lookups beyond the prompt tokens",
			"prefix-cache hit rate 0.55 counted, 0.4167 of first-time lookups: the lookups beyond the 1500 prompt tokens processed, fewer than 2 preemptions/s × 1000 prompt tokens: 1000 of 2500 tokens looked up per second discounted as recomputes, 0.75 of them as hits",
			"prefix-cache hit rate 0.4167 of first-time lookups (0.55 counted)", 0.417,
			recomputeLoad(map[series.Signal]sample{series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(0.55), series.PrefixCacheQueryTPS: x(2500)})},
		{"the same rate without preemptions", "", "", 0,
			recomputeLoad(map[series.Signal]sample{series.TTFTP50: qb(0.8, 0.75, 1), series.PreemptionRate: x(0)})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, c.after)
			res := evaluate(t, set, Options{Rules: []string{PrefixCacheMiss}, EvalFrom: evalFrom})
			got := findingsOf(res, PrefixCacheMiss)
			if c.current == 0 {
				if len(got) != 0 {
					t.Fatalf("want no finding, got %q", got[0].Text)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d findings, want 1", len(got))
			}
			f := got[0]
			if f.Evidence.Derived != c.derived || !strings.HasSuffix(f.Evidence.String(), "; at the peak, "+c.derived) {
				t.Errorf("evidence %q, want it to end with %q", f.Evidence.String(), c.derived)
			}
			if !strings.Contains(f.Text, c.text) {
				t.Errorf("text %q does not say %q", f.Text, c.text)
			}
			// The hour before held 0.8 without preemption.
			if cur := f.Recommendation.Current; cur.Low != c.current || cur.High != c.current || f.Recommendation.Value != 0.8 {
				t.Errorf("recommendation %+v, want 0.8 against %v now", f.Recommendation, c.current)
			}
		})
	}
}
