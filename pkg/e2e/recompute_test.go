package e2e_test

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// testRecomputesDoNotHideThePrefixMiss is issue 27's item 4 on prefix_miss_under_preemption:
// while the faulty instance's cache saturates, the prefix-cache hit rate its counters show stays
// above prefix_cache_miss's hit_rate, since preempted requests' recompute lookups hit their own
// cached blocks, yet the simulator's first-time lookups hit less than half: the finding comes
// from the discount and says so. It also measures the discounted estimate against the
// simulator's first-time hit rate, with the default recompute_hit_share and with the share the
// simulator's recomputes actually hit.
func testRecomputesDoNotHideThePrefixMiss(t *testing.T, b *bed) {
	run := b.runs[jobOf(sim.PrefixMissUnderPreemption, vllm.GenerationV1)]
	var tr sim.Finding
	for _, f := range run.truth {
		if f.Rule == diagnosis.PrefixCacheMiss {
			tr = f
		}
	}
	require.Equal(t, sim.FaultyInstance, tr.Instance, "prefix_cache_miss's ground truth in %v", run.truth)
	// The ground truth of the lookups: the same simulation the bed backfilled.
	sc, err := sim.Lookup(sim.PrefixMissUnderPreemption)
	require.NoError(t, err)
	res, err := sim.Run(sc, runStart, runFor, scrape, sim.WithoutSpans())
	require.NoError(t, err)
	require.Len(t, res.Truth, len(run.truth))
	for i, f := range res.Truth {
		require.True(t, f.Rule == run.truth[i].Rule && f.Start.Equal(run.truth[i].Start) && f.End.Equal(run.truth[i].End),
			"the in-process simulation is the backfilled one: %v against %v", res.Truth, run.truth)
	}

	tp, pc := pluginFor(t, b.prom.URL, map[string]any{"labelMatchers": fmt.Sprintf(`{job=%q}`, run.job)})
	resp := ask(t, tp, pc, query("A", map[string]any{"queryType": "signals", "signals": []string{"prefix_cache_hit_rate"}, "instance": tr.Instance},
		tr.Start, tr.End, scrape))
	r := resp.Responses["A"]
	require.NoError(t, r.Error)
	var counted []float64
	for _, f := range r.Frames {
		for i := 0; len(f.Fields) == 2 && i < f.Rows(); i++ {
			if v, ok := f.Fields[1].ConcreteAt(i); ok {
				counted = append(counted, v.(float64))
			}
		}
	}
	require.NotEmpty(t, counted)
	sort.Float64s(counted)
	median := counted[len(counted)/2]
	assert.Greater(t, median, 0.5, "the counted hit rate over the prefix miss: recomputes lift it above hit_rate")

	// estimate is the finding's current hit rate (the discounted rate averaged over the finding)
	// with a recompute_hit_share, and the simulator's first-time and recompute hit rates over it.
	estimate := func(share float64) (est, first, reshare float64, evidence string) {
		tp, pc := pluginFor(t, b.prom.URL, map[string]any{"labelMatchers": fmt.Sprintf(`{job=%q}`, run.job),
			"thresholds": map[string]any{diagnosis.PrefixCacheMiss: map[string]any{"recompute_hit_share": share}}})
		resp := ask(t, tp, pc, query("A", map[string]any{"queryType": "diagnosis", "rules": []string{diagnosis.PrefixCacheMiss}}, runStart, runStart.Add(runFor), scrape))
		r := resp.Responses["A"]
		require.NoError(t, r.Error)
		require.Len(t, r.Frames, 1)
		findings, advices := findingsOf(t, r.Frames[0]), adviceOf(t, r.Frames[0])
		evField, _ := r.Frames[0].FieldByName("evidence")
		require.NotNil(t, evField)
		for i, f := range findings {
			j, _ := judge(f, run.truth, map[string]time.Duration{diagnosis.PrefixCacheMiss: 5 * time.Minute}, 0)
			if j != hit {
				continue
			}
			require.NotNil(t, advices[i].current, "no current hit rate: %s", advices[i].sentence)
			l := res.LookupsBetween(f.instance, f.start, f.end)
			return *advices[i].current, l.FirstHitRate(), float64(l.RecomputeHits) / float64(l.RecomputeQueries), evField.At(i).(string)
		}
		t.Fatalf("no prefix_cache_miss finding matches %v with recompute_hit_share %v: %v", tr, share, findings)
		return 0, 0, 0, ""
	}
	est, first, reshare, evidence := estimate(0.75)
	assert.Less(t, first, 0.5, "the simulator's first-time hit rate over the finding")
	assert.Less(t, est, 0.5, "the discounted hit rate over the finding")
	assert.Contains(t, evidence, "discounted as recomputes", "the evidence states the discount")
	shared := math.Round(reshare*100) / 100
	atShare, _, _, _ := estimate(shared)
	t.Logf("prefix_miss_under_preemption: counted hit rate %.3f (median over the ground truth), first-time %.3f (simulator); "+
		"discounted %.3f with recompute_hit_share 0.75, %.3f with the simulator's share %.2f", median, first, est, atShare, shared)
	assert.InDelta(t, first, atShare, 0.05, "with the share the simulator's recomputes hit, the estimate is the first-time hit rate")
}
