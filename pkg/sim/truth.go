package sim

import (
	"time"
)

// The ground truth of a fault is where the model's own state shows the fault's mechanism,
// judged over a trailing minute of engine windows (as a 1m rate window would see it), then
// merged across short gaps and kept when it lasts long enough for a rule's `for`.
const (
	truthWindow  = 60.0  // seconds of state each judgement covers
	truthMaxGap  = 120.0 // closer intervals merge
	truthMinSpan = 120.0 // shorter ones are dropped
)

// mechanisms say, from engine state over a minute (and the instance's state before the
// fault as the baseline), whether a fault's cause is at work.
var mechanisms = map[string]func(a, base window) bool{
	// Long prompts prefilled whole held the engine for half a second or more.
	RulePrefillBlocking: func(a, _ window) bool { return a.blocking > 0 },
	// Prompts took several steps to prefill because of the token budget, without KV pressure.
	RuleTokenBudgetStarved: func(a, base window) bool {
		return a.firstTokens > 0 && mean(a.chunks, a.firstTokens) >= 3 &&
			mean(a.chunks, a.firstTokens) >= 2*max(1, mean(base.chunks, base.firstTokens)) &&
			a.preemptions == 0 && a.usage/a.span < 0.85
	},
	// Prefix caching is on but prompts do not share their prefix.
	RulePrefixCacheMiss: func(a, _ window) bool {
		return a.prefixCaching && a.queried > 0 && float64(a.hits)/float64(a.queried) < 0.5
	},
	// The drafter's tokens are mostly rejected.
	RuleSpecDecodeInefficient: func(a, _ window) bool {
		return a.specDecoding && a.draftTokens > 0 && float64(a.accepted)/float64(a.draftTokens) < 0.6
	},
	// The pool ran out and running requests were preempted, with the cache nearly full.
	RuleKVCacheSaturated: func(a, _ window) bool {
		return a.preemptions > 0 && a.exhausted > 0 && a.usage/a.span >= 0.85
	},
	// More than one preemption in the minute (the rule's rate above 1/min) while the cache was
	// mostly free on average over the same minute.
	RulePreemptionsFreeCache: func(a, _ window) bool {
		return a.preemptions > 1 && a.usage/a.span < 0.9
	},
	// A fifth of the requests waited while the cache stayed mostly free.
	RuleQueueWithFreeCache: func(a, _ window) bool {
		return waitRatio(a) > 0.2 && a.usage/a.span < 0.7
	},
	// A fifth of the requests waited with the cache nearly full.
	RulePastTheKnee: func(a, _ window) bool {
		return waitRatio(a) > 0.2 && a.usage/a.span >= 0.85
	},
	// Clients gave up on more than 5% of the requests.
	RuleClientTimeouts: func(a, _ window) bool {
		return a.finished > 0 && float64(a.aborted)/float64(a.finished) > 0.05
	},
	// Prompts at least twice as long as before.
	RulePrefillBound: func(a, base window) bool {
		return a.firstTokens > 0 && base.firstTokens > 0 &&
			mean(float64(a.promptTokens), a.firstTokens) >= 2*mean(float64(base.promptTokens), base.firstTokens)
	},
	// Each decode step at least twice as slow as before.
	RuleDecodeBound: func(a, base window) bool {
		return a.itlCount > 0 && base.itlCount > 0 && mean(a.itl, a.itlCount) >= 2*mean(base.itl, base.itlCount)
	},
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func waitRatio(a window) float64 {
	if a.running+a.waiting == 0 {
		return 0
	}
	return a.waiting / (a.running + a.waiting)
}

// truth finds, for each fault of the instance, the intervals where its mechanism was at work.
func truth(s *instanceSim, start time.Time, duration float64) []Finding {
	var out []Finding
	per := int(truthWindow / s.scrape)
	for _, f := range s.in.Faults {
		check := mechanisms[f.Rule]
		if check == nil {
			continue
		}
		var base window
		for k := 0; k < len(s.windows) && float64(k+1)*s.scrape <= f.From*duration; k++ {
			base.add(s.windows[k])
		}
		maxGap, minSpan := truthMaxGap, truthMinSpan
		var spans [][2]float64
		for k := per - 1; k < len(s.windows); k++ {
			var a window
			for j := k - per + 1; j <= k; j++ {
				a.add(s.windows[j])
			}
			if a.span < truthWindow/2 || !check(a, base) {
				continue
			}
			at := min(float64(k+1)*s.scrape, duration)
			from, to := at, at
			if n := len(spans); n > 0 && from-spans[n-1][1] <= maxGap {
				spans[n-1][1] = to
			} else {
				spans = append(spans, [2]float64{from, to})
			}
		}
		for _, sp := range spans {
			// Only what the fault caused: an interval must overlap the fault.
			if sp[1]-sp[0] < minSpan || sp[1] <= f.From*duration || sp[0] >= f.To*duration+maxGap {
				continue
			}
			out = append(out, Finding{
				Rule: f.Rule, Instance: s.in.Address, Model: s.in.Model,
				Start: start.Add(time.Duration(sp[0] * float64(time.Second))),
				End:   start.Add(time.Duration(sp[1] * float64(time.Second))),
			})
		}
	}
	return out
}
