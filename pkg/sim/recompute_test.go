package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// lookupSink records the engine's prefix-cache lookups.
type lookupSink struct {
	checkSink
	lookups []lookup
}

type lookup struct {
	queried, hit int
	recompute    bool
}

func (s *lookupSink) prefixLookup(queried, hit int, recompute bool) {
	s.lookups = append(s.lookups, lookup{queried, hit, recompute})
}

// A preempted request's computed blocks stay cached: its recompute lookup hits those that no
// other allocation evicted, which eviction takes from the tail of its chain.
func TestRecomputeHitsTheBlocksLeftCached(t *testing.T) {
	for _, c := range []struct {
		name    string
		evicted int // of its 20 kept blocks, before it is admitted again
	}{
		{"nothing evicted", 0},
		{"five evicted", 5},
		{"all evicted", 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseEngine()
			cfg.NumGPUBlocks = 30
			cfg.MaxModelLen = 400
			s := &lookupSink{checkSink: checkSink{t: t}}
			e := newEngine(cfg, rand.New(rand.NewPCG(1, 1)), s)
			s.eng = e
			// A 320-token prompt: 20 full blocks once prefilled, plus one for its first token.
			r := &request{id: 1, prompt: 320, target: 50, maxTokens: 100}
			e.waiting = append(e.waiting, r)
			now := 0.0
			for r.output == 0 {
				dt := e.plan(now)
				now += dt
				e.commit(now, dt)
			}
			e.running = e.running[:0]
			e.exhausted = true // as when the pool runs out
			e.preempt(r, now)
			if r.kept == nil || r.kept.blocks != 20 {
				t.Fatalf("kept %+v after preemption, want its 20 full blocks", r.kept)
			}
			// Another request takes every free block and c.evicted of the kept ones, and
			// finishes before the preempted request is admitted again.
			taken := e.free + c.evicted
			if !e.alloc(taken, now) {
				t.Fatalf("could not allocate %d blocks", taken)
			}
			e.free += taken
			e.plan(now)
			want := lookup{queried: 321, hit: (20 - c.evicted) * cfg.BlockSize, recompute: true}
			if n := len(s.lookups); n != 2 || s.lookups[1] != want {
				t.Fatalf("lookups %+v, want a first one and then %+v", s.lookups, want)
			}
			if e.free+e.evictable+r.held() != e.total {
				t.Errorf("blocks leaked: free %d + evictable %d + held %d != %d", e.free, e.evictable, r.held(), e.total)
			}
		})
	}
}

// prefix_miss_under_preemption's ground truth: while both faults hold, prompts' first lookups
// hit less than half of their tokens, yet the exported counters, which hold the recomputes'
// lookups too, show more than half; the ground truth adds up to what the counters export.
func TestPreemptionRecomputesHideThePrefixMissFromTheCounters(t *testing.T) {
	for _, gen := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationV0} {
		t.Run(string(gen), func(t *testing.T) {
			sc, err := LookupGeneration(PrefixMissUnderPreemption, gen)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(sc, t0, time.Hour, 15*time.Second, WithoutSpans())
			if err != nil {
				t.Fatal(err)
			}
			from, to := t0.Add(25*time.Minute), t0.Add(40*time.Minute)
			l := res.LookupsBetween(FaultyInstance, from, to)
			if l.FirstHitRate() >= 0.5 || l.HitRate() <= 0.5 {
				t.Errorf("first-time hit rate %.3f, counted %.3f over minutes 25 to 40: want the first below 0.5 and the counted above (%+v)",
					l.FirstHitRate(), l.HitRate(), l)
			}
			if gen != vllm.GenerationV1 {
				return
			}
			v := res.view(FaultyInstance)
			end := v.times[len(v.times)-1]
			total := res.LookupsBetween(FaultyInstance, t0, end.Add(time.Second))
			if q := v.increase(vllm.PrefixCacheQueries, t0, end); q != float64(total.Queries+total.RecomputeQueries) {
				t.Errorf("vllm:prefix_cache_queries_total grew by %v, the ground truth's lookups are %d", q, total.Queries+total.RecomputeQueries)
			}
			if h := v.increase(vllm.PrefixCacheHits, t0, end); h != float64(total.Hits+total.RecomputeHits) {
				t.Errorf("vllm:prefix_cache_hits_total grew by %v, the ground truth's hits are %d", h, total.Hits+total.RecomputeHits)
			}
		})
	}
}
