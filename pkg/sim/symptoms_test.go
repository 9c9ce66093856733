package sim

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// symptomRules are the rules any fault may also trip on its instance while it lasts: the
// latency symptoms, which the diagnosis reports as secondary to a specific cause. A fault's
// scenario names the others it trips (alsoTrips).
var symptomRules = []string{RulePrefillBound, RuleDecodeBound, RuleTokenBudgetStarved}

// overlap is how long two intervals share.
func overlap(a, b [2]time.Time) time.Duration {
	from, to := a[0], a[1]
	if b[0].After(from) {
		from = b[0]
	}
	if b[1].Before(to) {
		to = b[1]
	}
	return max(0, to.Sub(from))
}

func TestEachFaultShowsItsSymptomOnlyWhileItLasts(t *testing.T) {
	for _, name := range Scenarios() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := run(t, name)
			sc := res.Scenario
			// A scenario may strike with several faults at once (prefix_miss_under_preemption).
			injected := map[string]bool{}
			for _, in := range sc.Instances {
				for _, f := range in.Faults {
					if f.Rule != faultRestart {
						injected[f.Rule] = true
					}
				}
			}
			if len(injected) == 0 && len(res.Truth) > 0 {
				t.Fatalf("a scenario without faults has ground truth %v", res.Truth)
			}
			for rule := range injected {
				if !slices.ContainsFunc(res.Truth, func(f Finding) bool { return f.Rule == rule }) {
					t.Fatalf("fault %s left no ground truth", rule)
				}
			}
			for _, in := range sc.Instances {
				v := res.view(in.Address)
				pts := v.points(time.Minute)
				b := v.baseline(t0, t0.Add(res.Duration/3))
				var truth [][2]time.Time
				truthOf := map[string][][2]time.Time{}
				for _, f := range res.Truth {
					if f.Instance == in.Address {
						truth = append(truth, [2]time.Time{f.Start, f.End})
						truthOf[f.Rule] = append(truthOf[f.Rule], [2]time.Time{f.Start, f.End})
					}
				}
				allowed := map[string]bool{}
				if len(truth) > 0 {
					for rule := range injected {
						allowed[rule] = true
						for _, r := range append(symptomRules, faults[rule].alsoTrips...) {
							allowed[r] = true
						}
					}
				}
				var rules []string
				for r := range conditions {
					rules = append(rules, r)
				}
				sort.Strings(rules)
				for _, r := range rules {
					fired := firing(r, pts, b, res.Scrape)
					var during time.Duration
					for _, f := range fired {
						var inside time.Duration
						for _, tr := range truth {
							// The fault's own end and a few minutes of rate windows and drain.
							inside += overlap(f, [2]time.Time{tr[0].Add(-2 * time.Minute), tr[1].Add(4 * time.Minute)})
						}
						if !allowed[r] || inside < f[1].Sub(f[0]) {
							t.Errorf("%s: %s fires from %s to %s, outside the ground truth %v\n%s", in.Address, r,
								f[0].Format("15:04:05"), f[1].Format("15:04:05"), truth, table(pts))
						}
						for _, tr := range truthOf[r] {
							during += overlap(f, tr)
						}
					}
					if !injected[r] || len(truthOf[r]) == 0 || r == RulePreemptionsFreeCache {
						continue
					}
					var total time.Duration
					for _, tr := range truthOf[r] {
						total += tr[1].Sub(tr[0])
					}
					if during < total*7/10 {
						t.Errorf("%s: %s fires for %v of its %v ground truth\n%s", in.Address, r, during, total, table(pts))
					}
				}
			}
		})
	}
}

// preemptions_free_cache is judged on what its mechanism promises rather than on the
// instantaneous gauge: preemptions every minute, with the cache below 0.9 in most scrapes.
func TestPreemptionsHappenWithTheCacheMostlyFree(t *testing.T) {
	res := run(t, RulePreemptionsFreeCache)
	if len(res.Truth) == 0 {
		t.Fatal("no ground truth")
	}
	v := res.view(FaultyInstance)
	tr := res.Truth[0]
	var n, low int
	for _, p := range v.points(time.Minute) {
		if p.at.Before(tr.Start) || p.at.After(tr.End) {
			continue
		}
		n++
		if p.kv < 0.9 {
			low++
		}
	}
	preempt := v.increase("vllm:num_preemptions_total", tr.Start, tr.End) / tr.End.Sub(tr.Start).Minutes()
	if preempt <= 1 || low*2 < n {
		t.Errorf("%.1f preemptions a minute, kv usage below 0.9 in %d of %d scrapes", preempt, low, n)
	}
}

// A wedged engine is seen within 3 minutes of the stall's injected start: the rate window holds
// no step about a minute after it, and engine_stalled's `for` is 90 s.
func TestStallIsSeenWithinThreeMinutes(t *testing.T) {
	res := run(t, RuleEngineStalled)
	start := res.Start.Add(time.Duration(FaultFrom * float64(res.Duration)))
	v := res.view(FaultyInstance)
	fired := firing(RuleEngineStalled, v.points(time.Minute), baseline{}, res.Scrape)
	if len(fired) == 0 {
		t.Fatal("engine_stalled never fires on its scenario")
	}
	if at := fired[0][0].Add(forDuration(RuleEngineStalled)); at.Sub(start) > 3*time.Minute {
		t.Errorf("engine_stalled fires at %s, %v after the stall began at %s", at.Format("15:04:05"), at.Sub(start), start.Format("15:04:05"))
	}
}

// vLLM before 0.20 does not say why requests wait: on V0 the queue_deferred scenario's ground
// truth is the queue with free cache its metrics show, judged by that rule's mechanism.
func TestDeferredQueueIsAQueueWithFreeCacheOnV0(t *testing.T) {
	for _, c := range []struct {
		gen  vllm.Generation
		rule string
	}{{vllm.GenerationV1, RuleQueueDeferred}, {vllm.GenerationV0, RuleQueueWithFreeCache}} {
		sc, err := Lookup(RuleQueueDeferred)
		if err != nil {
			t.Fatal(err)
		}
		sc.Generation = c.gen
		res, err := Run(sc, t0, 30*time.Minute, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Truth) == 0 {
			t.Fatalf("%s: no ground truth", c.gen)
		}
		for _, f := range res.Truth {
			if f.Rule != c.rule || f.Instance != FaultyInstance {
				t.Errorf("%s: ground truth %s on %s, want %s on %s", c.gen, f.Rule, f.Instance, c.rule, FaultyInstance)
			}
		}
	}
}

// TestSpecByBatchPaysLightAndCostsHeavy: the scenario's speculation against the same run with
// it off (the counterfactual the simulator can run and a fleet cannot): decode per output token
// is lower with it at the light load's batch and higher at the heavy load's.
func TestSpecByBatchPaysLightAndCostsHeavy(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(spec bool) *Result {
		sc, err := Lookup(SpecByBatch)
		if err != nil {
			t.Fatal(err)
		}
		if !spec {
			sc.Instances[1].Engine.SpecTokens = 0
		}
		res, err := Run(sc, start, time.Hour, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	with, without := run(true), run(false)
	// Each half less its first five minutes, while the batch settles.
	light := [2]time.Time{start.Add(5 * time.Minute), start.Add(30 * time.Minute)}
	heavy := [2]time.Time{start.Add(35 * time.Minute), start.Add(time.Hour)}
	for _, c := range []struct {
		name   string
		window [2]time.Time
		pays   bool
	}{
		{"light load", light, true},
		{"heavy load", heavy, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, wo := with.DecodingOf(FaultyInstance, c.window[0], c.window[1]), without.DecodingOf(FaultyInstance, c.window[0], c.window[1])
			t.Logf("with speculation %.1f running, %.1f ms per token; without %.1f running, %.1f ms", w.Running, 1000*w.TPOT, wo.Running, 1000*wo.TPOT)
			if w.Requests < 100 || wo.Requests < 100 {
				t.Fatalf("%d and %d requests: too few to compare", w.Requests, wo.Requests)
			}
			if pays := w.TPOT < wo.TPOT; pays != c.pays {
				t.Errorf("speculation pays: %v, want %v", pays, c.pays)
			}
		})
	}
}
