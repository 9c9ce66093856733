package diagnosis

import (
	"fmt"
	"math"
	"sort"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Rule ids: DESIGN §4's matrix. They are persisted in dashboards, alert rules and settings.
const (
	PrefillBlocking        = "prefill_blocking"
	TokenBudgetStarved     = "token_budget_starved"
	PrefixCacheMiss        = "prefix_cache_miss"
	SpecDecodeInefficient  = "spec_decode_inefficient"
	KVCacheSaturated       = "kv_cache_saturated"
	PreemptionsFreeCache   = "preemptions_free_cache"
	QueueWithFreeCache     = "queue_with_free_cache"
	PastTheKnee            = "past_the_knee"
	ClientTimeouts         = "client_timeouts"
	PrefillBound           = "prefill_bound"
	DecodeBound            = "decode_bound"
	waitingRatioParam      = "waiting_ratio"
	kvUsageParam           = "kv_usage"
	baselineFactorParam    = "baseline_factor"
	meanRiseParam          = "mean_rise"
	nearZeroHitRateParam   = "near_zero_hit_rate"
	criticalBelowParam     = "critical_below"
	preemptionRateParam    = "preemption_rate"
	preemptionsPerMinParam = "preemptions_per_minute"
)

// explainedBy maps each symptom rule to the specific causes that produce the same symptom. While
// one of them fires on the same instance, the symptom is reported as secondary to it (DESIGN §4,
// "specific causes outrank symptoms").
var explainedBy = map[string][]string{
	// A starved token budget is the specific cause of slower prefills, with a flag to change.
	PrefillBound: {KVCacheSaturated, PreemptionsFreeCache, PastTheKnee, QueueWithFreeCache, PrefixCacheMiss, PrefillBlocking, TokenBudgetStarved},
	// Prompts that miss the prefix cache are prefilled whole, in the same steps as the decoding
	// sequences (chunked prefill mixes them), so every decode step grows with them.
	DecodeBound: {KVCacheSaturated, PreemptionsFreeCache, PastTheKnee, SpecDecodeInefficient, PrefixCacheMiss},
	// A decode-bound batch slows every step, the prefill steps too: the prefills take longer
	// because each step does, not because the budget splits them into more steps.
	TokenBudgetStarved: {PrefixCacheMiss, QueueWithFreeCache, KVCacheSaturated, PreemptionsFreeCache, DecodeBound},
	// A budget of a few dozen tokens serialises prefills: each takes many steps and the next
	// waits for it, so TTFT's tail grows with its median. Blocking by a few long prompts raises
	// the p99 alone (seed 000: "p50 and p99 both rise" is the starved budget's row), and
	// token_budget_starved holds only when the p50 rose too and prompts did not grow.
	PrefillBlocking: {TokenBudgetStarved},
	// Preemption by recompute puts the preempted requests back in the waiting queue, so a
	// saturated KV cache queues requests with the cache full by its own mechanism: that queue is
	// the saturation's, and its remedy (fewer or shorter sequences, fp8) comes first: seed 000
	// gives "cache full + preemptions" the KV remedy and seed 004 reads a deep queue alone as
	// "past the knee" (add capacity). A queue with a full cache and no preemptions stays
	// past_the_knee of its own.
	PastTheKnee: {KVCacheSaturated},
}

// headlineOrder ranks rules for an instance's headline, its likely bottleneck: running out of KV
// memory first (preemptions slow every stage), then more load than capacity, then the scheduler's
// budget, then cache and drafter efficiency, then the shape of prefills, then the unexplained
// symptoms, and last the clients' timeouts, a consequence of whatever else is wrong.
var headlineOrder = []string{
	KVCacheSaturated, PreemptionsFreeCache, PastTheKnee, QueueWithFreeCache, PrefixCacheMiss,
	SpecDecodeInefficient, PrefillBlocking, TokenBudgetStarved, PrefillBound, DecodeBound, ClientTimeouts,
}

func forParam(minutes float64) Param {
	return Param{Name: ForParam, Default: minutes * 60, Unit: "s", Kind: Seconds,
		Description: "how long the condition must hold before the rule fires"}
}

func param(name string, def float64, unit string, kind Kind, desc string) Param {
	return Param{Name: name, Default: def, Unit: unit, Kind: kind, Description: desc}
}

// matrix is DESIGN §4 as data, with defaults in force.
var matrix = []Rule{
	{
		ID:        PrefillBlocking,
		Title:     "Long prefills blocking other requests",
		Symptom:   "TTFT p99 more than twice p50: some requests wait behind long prefills",
		condition: "TTFT p99 / p50 > {ttft_ratio}, certain from the bucket bounds (lower bound of p99 over upper bound of p50)",
		Severity:  Warning,
		Cause:     "long prefills block other requests",
		Action:    "enable chunked prefill (--enable-chunked-prefill) and tune --max-num-batched-tokens",
		Evidence:  []series.Signal{series.TTFTP99, series.TTFTP50, series.PrefillTimeMean, series.PromptLengthMean},
		Params: []Param{
			param("ttft_ratio", 2, "ratio", Factor, "TTFT p99 over p50, lower bound of p99's bucket over upper bound of p50's"),
			forParam(5),
		},
		Required: []series.Signal{series.TTFTP50, series.TTFTP99},
		Quantile: true,
		eval: func(e *env, i int) outcome {
			j := newJudge()
			lo99, _ := e.bounds(&j, series.TTFTP99, i)
			_, hi50 := e.bounds(&j, series.TTFTP50, i)
			// p99 > lo99 and p50 ≤ hi50, so lo99/hi50 ≥ ratio makes p99/p50 > ratio certain.
			j.atLeast(ratio(lo99, hi50), e.p("ttft_ratio"))
			return j.outcome(Warning)
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("TTFT p99 %s against p50 %s", quantileText(e, series.TTFTP99, i), quantileText(e, series.TTFTP50, i))
		},
	},
	{
		ID:      TokenBudgetStarved,
		Title:   "Token budget starving prefills",
		Symptom: "TTFT and prefill time up together while the queue is short and the KV cache has room",
		condition: "TTFT p50 and p99 both ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline), " +
			"mean prefill time ≥ {baseline_factor}× baseline, mean queue time < mean prefill time, KV usage < {kv_usage}, " +
			"preemptions ≤ {preemption_rate}/s, and prompts not {baseline_factor}× longer than the baseline's (when their length is known)",
		Severity: Warning,
		Cause:    "--max-num-batched-tokens is so low that prefills take many engine steps",
		Action:   "raise --max-num-batched-tokens",
		Evidence: []series.Signal{series.TTFTP50, series.TTFTP99, series.PrefillTimeMean, series.QueueTimeMean, series.KVUsage, series.PreemptionRate},
		Params: []Param{
			param(baselineFactorParam, 1.5, "ratio", Factor, "growth of TTFT p50, p99 and mean prefill time over their baseline"),
			param(kvUsageParam, 0.85, "fraction", Fraction, "KV usage stays below this (otherwise the cache, not the budget, is the limit)"),
			param(preemptionRateParam, 0, "1/s", Rate, "preemptions per second stay at or below this"),
			forParam(5),
		},
		Required:  []series.Signal{series.TTFTP50, series.TTFTP99, series.PrefillTimeMean, series.QueueTimeMean, series.KVUsage, series.PreemptionRate},
		Optional:  []series.Signal{series.PromptLengthMean},
		Quantile:  true,
		Baselines: []series.Signal{series.TTFTP50, series.TTFTP99, series.PrefillTimeMean, series.PromptLengthMean},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			f := e.p(baselineFactorParam)
			// Prompts that grew by the same factor explain a slower prefill under any budget:
			// that is prefill_bound's "longer prompts", not a starved budget (seed 000: long
			// prompts should have a proportional TTFT).
			if pl, base := e.optional(series.PromptLengthMean, i), e.baseline(series.PromptLengthMean, false).value[e.baseStep(i)]; !math.IsNaN(pl) && !math.IsNaN(base) {
				j.below(pl, f*base)
			}
			kv := e.value(&j, series.KVUsage, i)
			j.below(kv, e.p(kvUsageParam))
			j.atMost(e.value(&j, series.PreemptionRate, i), e.p(preemptionRateParam))
			pf := e.value(&j, series.PrefillTimeMean, i)
			j.below(e.value(&j, series.QueueTimeMean, i), pf)
			j.atLeast(pf, f*e.baseValue(&j, series.PrefillTimeMean, i))
			lo50, _ := e.bounds(&j, series.TTFTP50, i)
			lo99, _ := e.bounds(&j, series.TTFTP99, i)
			j.atLeast(lo50, f*e.baseUpper(&j, series.TTFTP50, i))
			j.atLeast(lo99, f*e.baseUpper(&j, series.TTFTP99, i))
			return j.outcome(Warning)
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("TTFT p50 %s (baseline %s), mean prefill %s (baseline %s), mean queue %s, KV usage %s",
				quantileText(e, series.TTFTP50, i), baselineQuantileText(e, series.TTFTP50, i),
				seconds(e.optional(series.PrefillTimeMean, i)), seconds(e.baseline(series.PrefillTimeMean, false).value[e.baseStep(i)]),
				seconds(e.optional(series.QueueTimeMean, i)), num(e.optional(series.KVUsage, i)))
		},
	},
	{
		ID:        PrefixCacheMiss,
		Title:     "Prefix cache missing",
		Symptom:   "slow first tokens while the prefix cache rarely hits",
		condition: "TTFT p50 > {ttft_p50} s (lower bound of its bucket) and prefix-cache hit rate < {hit_rate}, with prefix caching on",
		Severity:  Warning,
		Cause:     "prompts are not byte-identical where they should share a prefix (timestamps or session ids in the system prompt)",
		Action:    "make the shared prefix identical across requests; check --enable-prefix-caching",
		Evidence:  []series.Signal{series.TTFTP50, series.PrefixCacheHitRate, series.PromptLengthMean, series.PrefillTimeMean},
		Params: []Param{
			param("ttft_p50", 0.5, "s", Seconds, "TTFT p50 above this, from the lower bound of its bucket"),
			param("hit_rate", 0.5, "fraction", Fraction, "prefix-cache hit rate (hit tokens over looked-up tokens) below this"),
			param(nearZeroHitRateParam, 0.02, "fraction", Fraction,
				"a hit rate at or below this with prompts longer than one KV block means not even one block was reused"),
			forParam(5),
		},
		Required: []series.Signal{series.TTFTP50, series.PrefixCacheHitRate},
		Optional: []series.Signal{series.PromptLengthMean},
		Quantile: true,
		eval: func(e *env, i int) outcome {
			j := newJudge()
			j.below(e.value(&j, series.PrefixCacheHitRate, i), e.p("hit_rate"))
			// The quantile lies in (lo50, hi50]: lo50 ≥ the threshold makes "above it" certain.
			lo50, _ := e.bounds(&j, series.TTFTP50, i)
			j.atLeast(lo50, e.p("ttft_p50"))
			return j.outcome(Warning)
		},
		applicable: prefixCachingOn,
		refine:     shortPrefix,
		summary: func(e *env, i int) string {
			return fmt.Sprintf("TTFT p50 %s, prefix-cache hit rate %s", quantileText(e, series.TTFTP50, i), num(e.optional(series.PrefixCacheHitRate, i)))
		},
	},
	{
		ID:         SpecDecodeInefficient,
		Title:      "Speculative decoding inefficient",
		Symptom:    "most draft tokens are rejected: speculation costs more than it saves",
		condition:  "draft acceptance rate < {acceptance_rate} (critical below {critical_below})",
		Severity:   Warning,
		Escalation: &Escalation{Severity: Critical, Param: criticalBelowParam, Base: "acceptance_rate"},
		Cause:      "a drafter of another model family, temperature above 0.9, or a very large batch",
		Action:     "change the drafter (--speculative-config) or disable speculative decoding",
		Evidence:   []series.Signal{series.SpecAcceptanceRate, series.SpecAcceptanceLength, series.Running},
		Params: []Param{
			param("acceptance_rate", 0.6, "fraction", Fraction, "accepted draft tokens over proposed draft tokens below this"),
			param(criticalBelowParam, 0.5, "fraction", Fraction, "below this acceptance rate the finding is critical"),
			forParam(5),
		},
		Required: []series.Signal{series.SpecAcceptanceRate},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			v := e.value(&j, series.SpecAcceptanceRate, i)
			j.below(v, e.p("acceptance_rate"))
			sev := Warning
			if v < e.p(criticalBelowParam) {
				sev = Critical
			}
			return j.outcome(sev)
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("acceptance rate %s", num(e.optional(series.SpecAcceptanceRate, i)))
		},
	},
	{
		ID:        KVCacheSaturated,
		Title:     "KV cache saturated",
		Symptom:   "requests preempted while the KV cache is nearly full",
		condition: "preemption rate > {preemption_rate}/s and KV usage > {kv_usage}",
		Severity:  Critical,
		Cause:     "not enough KV blocks for the concurrency",
		Action:    "lower --max-num-seqs or --max-model-len, or enable --kv-cache-dtype fp8",
		Evidence:  []series.Signal{series.KVUsage, series.PreemptionRate, series.Running, series.Waiting},
		Params: []Param{
			param(kvUsageParam, 0.85, "fraction", Fraction, "KV cache usage (max over data-parallel engines) above this"),
			param(preemptionRateParam, 0.5, "1/s", Rate, "preemptions per second above this"),
			forParam(3),
		},
		Required: []series.Signal{series.KVUsage, series.PreemptionRate},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			j.above(e.value(&j, series.KVUsage, i), e.p(kvUsageParam))
			j.above(e.value(&j, series.PreemptionRate, i), e.p(preemptionRateParam))
			return j.outcome(Critical)
		},
		refine: func(e *env, _ span) (string, string, string) {
			if c, ok := e.cacheConfig(); ok && c.FP8() {
				return "fp8_already", "", "lower --max-num-seqs or --max-model-len (the KV cache is already " + c.CacheDType + ")"
			}
			return "", "", ""
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("usage %s, %s preemptions/s", num(e.optional(series.KVUsage, i)), num(e.optional(series.PreemptionRate, i)))
		},
	},
	{
		ID:        PreemptionsFreeCache,
		Title:     "Preemptions with free KV cache",
		Symptom:   "requests preempted although the KV cache is not full",
		condition: "preemptions > {preemptions_per_minute}/min and KV usage averaged over the same window < {kv_usage}",
		Severity:  Warning,
		Cause:     "--max-num-seqs is too high for the KV cache: admitted sequences outgrow it as they decode",
		Action:    "lower --max-num-seqs or --max-model-len",
		Evidence:  []series.Signal{series.PreemptionRate, series.KVUsageAvg, series.KVUsage, series.Running},
		Params: []Param{
			param(preemptionsPerMinParam, 1, "1/min", Rate, "preemptions per minute above this"),
			param(kvUsageParam, 0.9, "fraction", Fraction, "KV usage, averaged over the rate window, below this"),
			forParam(5),
		},
		Required: []series.Signal{series.PreemptionRate, series.KVUsageAvg},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			// vLLM preempts only when a step finds no free block, so at that instant the cache is
			// full: a rate of preemptions is judged against the cache's usage over the same window.
			j.above(60*e.value(&j, series.PreemptionRate, i), e.p(preemptionsPerMinParam))
			j.below(e.value(&j, series.KVUsageAvg, i), e.p(kvUsageParam))
			return j.outcome(Warning)
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("%s preemptions/min at KV usage %s on average over the window", num(60*e.optional(series.PreemptionRate, i)), num(e.optional(series.KVUsageAvg, i)))
		},
	},
	{
		ID:      QueueWithFreeCache,
		Title:   "Queue with free KV cache",
		Symptom: "requests wait although the KV cache has room",
		condition: "waiting / (running + waiting) > {waiting_ratio} and KV usage < {kv_usage} " +
			"(waiting for capacity only, when vLLM reports the reason)",
		Severity: Warning,
		Cause:    "the token budget per step is too low (or --max-num-seqs is reached)",
		Action:   "raise --max-num-batched-tokens (and --max-num-seqs if running sits at it)",
		Evidence: []series.Signal{series.WaitingRatio, series.Waiting, series.WaitingCapacity, series.Running, series.KVUsage},
		Params: []Param{
			param(waitingRatioParam, 0.2, "fraction", Fraction, "share of requests waiting, of running plus waiting, above this"),
			param(kvUsageParam, 0.7, "fraction", Fraction, "KV usage below this"),
			forParam(5),
		},
		Required: []series.Signal{series.Running, series.Waiting, series.KVUsage},
		Optional: []series.Signal{series.WaitingCapacity},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			j.above(waitingShare(e, &j, i), e.p(waitingRatioParam))
			j.below(e.value(&j, series.KVUsage, i), e.p(kvUsageParam))
			return j.outcome(Warning)
		},
		summary: func(e *env, i int) string {
			j := newJudge()
			return fmt.Sprintf("%s waiting of %s, KV usage %s", percent(waitingShare(e, &j, i)),
				num(e.optional(series.Running, i)+e.optional(series.Waiting, i)), num(e.optional(series.KVUsage, i)))
		},
	},
	{
		ID:        PastTheKnee,
		Title:     "Past the knee",
		Symptom:   "requests queue while the KV cache is nearly full",
		condition: "waiting / (running + waiting) > {waiting_ratio} and KV usage ≥ {kv_usage}",
		Severity:  Critical,
		Cause:     "more traffic than the instance's capacity",
		Action:    "add instances, route traffic elsewhere, or autoscale",
		Evidence:  []series.Signal{series.WaitingRatio, series.Waiting, series.Running, series.KVUsage, series.RequestRate},
		Params: []Param{
			param(waitingRatioParam, 0.2, "fraction", Fraction, "share of requests waiting, of running plus waiting, above this"),
			param(kvUsageParam, 0.85, "fraction", Fraction, "KV usage at or above this"),
			forParam(5),
		},
		Required: []series.Signal{series.Running, series.Waiting, series.KVUsage},
		Optional: []series.Signal{series.WaitingCapacity},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			j.above(waitingShare(e, &j, i), e.p(waitingRatioParam))
			j.atLeast(e.value(&j, series.KVUsage, i), e.p(kvUsageParam))
			return j.outcome(Critical)
		},
		summary: func(e *env, i int) string {
			j := newJudge()
			return fmt.Sprintf("%s of requests waiting, KV usage %s", percent(waitingShare(e, &j, i)), num(e.optional(series.KVUsage, i)))
		},
	},
	{
		ID:        ClientTimeouts,
		Title:     "Clients timing out",
		Symptom:   "a share of requests aborted before they finished",
		condition: "aborted requests / finished requests > {abort_ratio}",
		Severity:  Critical,
		Cause:     "clients hit their timeout: the latency objective is already broken",
		Action:    "look at the other findings of this instance; shed load or add capacity",
		Evidence:  []series.Signal{series.AbortRatio, series.RequestRate, series.E2EP99},
		Params: []Param{
			param("abort_ratio", 0.05, "fraction", Fraction, "aborted over all finished requests above this"),
			forParam(5),
		},
		Required: []series.Signal{series.AbortRatio},
		eval: func(e *env, i int) outcome {
			j := newJudge()
			j.above(e.value(&j, series.AbortRatio, i), e.p("abort_ratio"))
			return j.outcome(Critical)
		},
		summary: func(e *env, i int) string {
			return fmt.Sprintf("%s of requests aborted", percent(e.optional(series.AbortRatio, i)))
		},
	},
	{
		ID:      PrefillBound,
		Title:   "Prefill-bound latency",
		Symptom: "TTFT p99 doubled against the hour before, with the prefill time rising with it",
		condition: "TTFT p99 ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline) " +
			"and mean prefill time ≥ {mean_rise}× baseline",
		Severity: Warning,
		Cause:    "longer prompts or wider prefill batches",
		Action: "see the requests of the window; if no other cause shows, profile that instance: start it with --profiler-config, " +
			"POST /start_profile, send a few representative requests, POST /stop_profile",
		Evidence: []series.Signal{series.TTFTP99, series.PrefillTimeMean, series.PromptLengthMean, series.QueueTimeMean},
		Params: []Param{
			param(baselineFactorParam, 2, "ratio", Factor, "TTFT p99 over its baseline"),
			param(meanRiseParam, 1.5, "ratio", Factor, "mean prefill time over its baseline"),
			forParam(5),
		},
		Required:  []series.Signal{series.TTFTP99, series.PrefillTimeMean},
		Quantile:  true,
		Baselines: []series.Signal{series.TTFTP99, series.PrefillTimeMean},
		eval:      growth(series.TTFTP99, series.PrefillTimeMean),
		summary:   growthText("TTFT p99", series.TTFTP99, "mean prefill", series.PrefillTimeMean),
	},
	{
		ID:      DecodeBound,
		Title:   "Decode-bound latency",
		Symptom: "time per output token p99 doubled against the hour before, with the decode time rising with it",
		condition: "TPOT p99 ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline) " +
			"and mean decode time ≥ {mean_rise}× baseline; where vLLM has no per-request TPOT histogram (V0), " +
			"mean time per output token ≥ {baseline_factor}× baseline instead of the p99",
		Severity: Warning,
		Cause:    "batch width or memory bandwidth",
		Action: "see the requests of the window; if no other cause shows, profile that instance: start it with --profiler-config, " +
			"POST /start_profile, send a few representative requests, POST /stop_profile",
		Evidence: []series.Signal{series.TPOTP99, series.TPOTMean, series.DecodeTimeMean, series.Running, series.OutputLengthMean},
		Params: []Param{
			param(baselineFactorParam, 2, "ratio", Factor, "TPOT p99 (or, without it, mean TPOT) over its baseline"),
			param(meanRiseParam, 1.5, "ratio", Factor, "mean decode time over its baseline"),
			forParam(5),
		},
		Required:   []series.Signal{series.DecodeTimeMean},
		Optional:   []series.Signal{series.TPOTP99, series.TPOTMean},
		Quantile:   true,
		Baselines:  []series.Signal{series.TPOTP99, series.TPOTMean, series.DecodeTimeMean},
		applicable: tpotKnown,
		eval: func(e *env, i int) outcome {
			if e.get(series.TPOTP99) != nil {
				return growth(series.TPOTP99, series.DecodeTimeMean)(e, i)
			}
			return meanTPOTGrowth(e, i)
		},
		summary: func(e *env, i int) string {
			if e.get(series.TPOTP99) != nil {
				return growthText("TPOT p99", series.TPOTP99, "mean decode", series.DecodeTimeMean)(e, i)
			}
			return fmt.Sprintf("mean TPOT %s (baseline %s), mean decode %s (baseline %s)",
				seconds(e.optional(series.TPOTMean, i)), seconds(e.baseline(series.TPOTMean, false).value[e.baseStep(i)]),
				seconds(e.optional(series.DecodeTimeMean, i)), seconds(e.baseline(series.DecodeTimeMean, false).value[e.baseStep(i)]))
		},
	},
}

// waitingShare is waiting / (running + waiting), counting only requests that wait for capacity
// when vLLM reports the reason (deferred ones wait on LoRA slots or KV transfers, not on the
// budget). An idle server has no queue: 0.
func waitingShare(e *env, j *judge, i int) float64 {
	r := e.value(j, series.Running, i)
	w := e.value(j, series.Waiting, i)
	if c := e.optional(series.WaitingCapacity, i); !math.IsNaN(c) {
		w = c
	}
	if r+w == 0 {
		return 0
	}
	return w / (r + w)
}

// growth is the condition of prefill_bound and decode_bound: a quantile certainly grown by the
// factor over its baseline, and the stage's mean time grown with it.
func growth(q, mean series.Signal) func(e *env, i int) outcome {
	return func(e *env, i int) outcome {
		j := newJudge()
		m := e.value(&j, mean, i)
		j.atLeast(m, e.p(meanRiseParam)*e.baseValue(&j, mean, i))
		lo, _ := e.bounds(&j, q, i)
		j.atLeast(lo, e.p(baselineFactorParam)*e.baseUpper(&j, q, i))
		return j.outcome(Warning)
	}
}

// tpotKnown makes decode_bound apply where the time per output token is known, as the p99 of
// requests' TPOT or, without that histogram, as its mean.
func tpotKnown(e *env) string {
	if e.get(series.TPOTP99) != nil || e.get(series.TPOTMean) != nil {
		return ""
	}
	if why := e.set.Absent[series.TPOTMean]; why != "" {
		return fmt.Sprintf("%s is unavailable: %s", series.TPOTMean, why)
	}
	return fmt.Sprintf("neither %s nor %s has a series for this instance", series.TPOTP99, series.TPOTMean)
}

// meanTPOTGrowth is decode_bound where vLLM has no per-request TPOT histogram: V0's
// time_per_output_token_seconds observes every inter-token gap, so its p99 is the slowest steps'
// (a step that carries a long prefill chunk stalls every decoding request once) and not the
// p99 of requests' TPOT. Its mean, total decode time over tokens, is the TPOT of the window.
// It needs enough requests like the quantile it stands for.
func meanTPOTGrowth(e *env, i int) outcome {
	j := newJudge()
	if !e.enough(&j, i) {
		return j.outcome(Warning)
	}
	m := e.value(&j, series.DecodeTimeMean, i)
	j.atLeast(m, e.p(meanRiseParam)*e.baseValue(&j, series.DecodeTimeMean, i))
	j.atLeast(e.value(&j, series.TPOTMean, i), e.p(baselineFactorParam)*e.baseValue(&j, series.TPOTMean, i))
	return j.outcome(Warning)
}

func growthText(qLabel string, q series.Signal, mLabel string, mean series.Signal) func(e *env, i int) string {
	return func(e *env, i int) string {
		return fmt.Sprintf("%s %s (baseline %s), %s %s (baseline %s)", qLabel, quantileText(e, q, i), baselineQuantileText(e, q, i),
			mLabel, seconds(e.optional(mean, i)), seconds(e.baseline(mean, false).value[e.baseStep(i)]))
	}
}

// prefixCachingOn makes prefix_cache_miss apply only where vllm:cache_config_info says prefix
// caching is on: with it off, a zero hit rate is expected and says nothing.
func prefixCachingOn(e *env) string {
	c, ok := e.cacheConfig()
	switch {
	case !ok:
		return "vllm:cache_config_info is missing for this instance, so whether prefix caching is on is unknown"
	case !c.PrefixCachingKnown:
		return "vllm:cache_config_info does not say whether prefix caching is on"
	case !c.PrefixCaching:
		return "prefix caching is off on this instance (enable_prefix_caching=False)"
	}
	return ""
}

// shortPrefix tells the cases DESIGN §4 and TELEMETRY §6 ask to report distinctly. vLLM caches
// whole KV blocks, so a hit rate that stays near zero while prompts are longer than one block
// means no request reused even its first block: whatever the prompts share is shorter than one
// block, or differs within it. The metrics cannot tell those two apart (that needs the prompts),
// so the cause names both. Prompts shorter than one block cannot hit at all, and then the slow
// TTFT has another cause.
func shortPrefix(e *env, r span) (variant, cause, action string) {
	c, _ := e.cacheConfig()
	if c.BlockSize <= 0 {
		return "", "", ""
	}
	maxHit := math.Inf(-1)
	var lengths []float64
	for i := r.start; i <= r.end; i++ {
		if v := e.optional(series.PrefixCacheHitRate, i); !math.IsNaN(v) {
			maxHit = math.Max(maxHit, v)
		}
		if v := e.optional(series.PromptLengthMean, i); !math.IsNaN(v) {
			lengths = append(lengths, v)
		}
	}
	if len(lengths) == 0 {
		return "", "", ""
	}
	sort.Float64s(lengths)
	prompt := sortedWindow(lengths).median()
	block := float64(c.BlockSize)
	switch {
	case prompt < block:
		return "prompts_shorter_than_block",
			fmt.Sprintf("prompts average %.0f tokens, less than one KV block (%d tokens): prefix caching cannot reuse them, so the slow first tokens come from elsewhere", prompt, c.BlockSize),
			"look at the other findings of this instance"
	case maxHit <= e.p(nearZeroHitRateParam):
		return "shared_prefix_shorter_than_block",
			fmt.Sprintf("no request reused even one KV block (%d tokens) although prompts average %.0f tokens: the prefix they share is shorter than one block, or differs within its first %d tokens (a timestamp or session id at the top of the system prompt)", c.BlockSize, prompt, c.BlockSize),
			fmt.Sprintf("make at least the first %d tokens of every prompt identical: put the fixed instructions first and variable parts after them", c.BlockSize)
	}
	return "", "", ""
}
