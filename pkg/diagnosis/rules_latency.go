package diagnosis

import (
	"fmt"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The latency symptoms: a stage grown against the hour before with no specific cause of its own.
// The specific causes that produce them outrank them. Their ids are persisted in dashboards, alert
// rules and settings.
const (
	PrefillBound = "prefill_bound"
	DecodeBound  = "decode_bound"
)

var prefillBound = Rule{
	ID:      PrefillBound,
	Title:   "Prefill-bound latency",
	Symptom: "TTFT p99 doubled against the hour before, with the prefill time rising with it",
	condition: "TTFT p99 ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline) " +
		"and mean prefill time ≥ {mean_rise}× baseline",
	Severity: Warning,
	Cause:    "longer prompts or wider prefill batches",
	Action:   profileAction,
	Promise: series.Promise{Signal: series.TTFTP99, Direction: series.Down,
		Sentence: "TTFT p99 falls: once the cause the requests or the profile show is removed, prefills are as fast as before"},
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
	recommend: noValue(symptomAdvice),
	rank:      90,
	// Slower prefills are what these causes produce too, each with a flag to change.
	explainedBy: []string{KVCacheSaturated, PreemptionsFreeCache, PastTheKnee, QueueWithFreeCache, PrefixCacheMiss, PrefillBlocking},
	lengthens:   map[string]int{StagePrefill: 60},
}

var decodeBound = Rule{
	ID:      DecodeBound,
	Title:   "Decode-bound latency",
	Symptom: "time per output token p99 doubled against the hour before, with the decode time rising with it",
	condition: "TPOT p99 ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline) " +
		"and mean decode time ≥ {mean_rise}× baseline; where vLLM has no per-request TPOT histogram (V0), " +
		"mean time per output token ≥ {baseline_factor}× baseline instead of the p99",
	Severity: Warning,
	Cause:    "batch width or memory bandwidth",
	Action:   profileAction,
	Promise: series.Promise{Signal: series.TPOTMean, Direction: series.Down,
		Sentence: "decode time per output token falls: once the cause the requests or the profile show is removed, decode steps are as fast as before"},
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
	recommend: noValue(symptomAdvice),
	rank:      100,
	// Slower decode steps are what these causes produce too, each with a flag to change.
	explainedBy: []string{KVCacheSaturated, PreemptionsFreeCache, PastTheKnee, SpecDecodeInefficient},
	// A decode-bound batch slows every step, the prefill steps too: the prefills take longer
	// because each step does, not because the budget splits them into more steps.
	explains:  []string{TokenBudgetStarved},
	lengthens: map[string]int{StageDecode: 50},
}

// What the latency symptoms advise: with no specific cause, a profile of the instance.
const (
	profileAction = "see the requests of the window; if no other cause shows, profile that instance: start it with --profiler-config, " +
		"POST /start_profile, send a few representative requests, POST /stop_profile"
	symptomAdvice = "a symptom without a specific cause: the next step is a profile, not a flag's value"
)

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
