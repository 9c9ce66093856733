package diagnosis

import (
	"fmt"
	"math"
	"sort"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// The prefill rules: prefills that hold the engine, and a token budget that splits them into many
// steps. Their ids are persisted in dashboards, alert rules and settings.
const (
	PrefillBlocking    = "prefill_blocking"
	TokenBudgetStarved = "token_budget_starved"
)

var prefillBlocking = Rule{
	ID:        PrefillBlocking,
	Title:     "Long prefills blocking other requests",
	Symptom:   "TTFT p99 more than twice p50: some requests wait behind long prefills",
	condition: "TTFT p99 / p50 > {ttft_ratio}, certain from the bucket bounds (lower bound of p99 over upper bound of p50)",
	Severity:  Warning,
	Cause:     "long prefills block other requests",
	Action:    "enable chunked prefill (--enable-chunked-prefill) and tune --max-num-batched-tokens",
	Promise: series.Promise{Signal: series.TTFTRatio, Direction: series.Down,
		Sentence: "TTFT p99/p50 falls toward 1: with chunked prefill a long prompt is prefilled in budget-sized chunks between other requests' steps, so it no longer holds their first tokens"},
	Evidence: []series.Signal{series.TTFTP99, series.TTFTP50, series.PrefillTimeMean, series.PromptLengthMean},
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
	recommend: noValue("its flag, --enable-chunked-prefill, is a switch; the budget to tune with it is token_budget_starved's value"),
	rank:      70,
	// A prefill that holds the engine makes the requests behind it wait, and those that share its
	// steps prefill slower.
	lengthens: map[string]int{StagePrefill: 20, StageQueue: 60},
}

var tokenBudgetStarved = Rule{
	ID:      TokenBudgetStarved,
	Title:   "Token budget starving prefills",
	Symptom: "TTFT and prefill time up together while the queue is short and the KV cache has room",
	condition: "TTFT p50 and p99 both ≥ {baseline_factor}× baseline (lower bound now over upper bound of the baseline), " +
		"mean prefill time ≥ {baseline_factor}× baseline, mean queue time < mean prefill time, KV usage < {kv_usage}, " +
		"preemptions ≤ {preemption_rate}/s, and prompts not {baseline_factor}× longer than the baseline's (when their length is known)",
	Severity: Warning,
	Cause:    "--max-num-batched-tokens is so low that prefills take many engine steps",
	Action:   "raise --max-num-batched-tokens",
	Promise: series.Promise{Signal: series.TTFTP50, Direction: series.Down,
		Sentence: "TTFT p50 falls: a budget that takes a whole prompt per step prefills each in one step instead of many"},
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
		// that is prefill_bound's "longer prompts" (a longer prompt takes proportionally
		// longer), while a starved budget slows the prefills of the same prompts.
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
	recommend: budgetAdvice,
	rank:      80,
	// Slower prefills are also what these causes produce, each with its own flag.
	explainedBy: []string{PrefixCacheMiss, QueueWithFreeCache, KVCacheSaturated, PreemptionsFreeCache},
	// A starved budget is the specific cause of slower prefills, with a flag to change. And a
	// budget of a few dozen tokens serialises prefills: each takes many steps and the next waits
	// for it, so TTFT's tail grows with its median. Blocking by a few long prompts raises the p99
	// alone (p50 and p99 rising together is the starved budget's reading), and
	// token_budget_starved holds only when the p50 rose too and prompts did not grow.
	explains:  []string{PrefillBound, PrefillBlocking},
	lengthens: map[string]int{StagePrefill: 30, StageQueue: 50},
}

// BudgetInput is what BatchedTokens reads over the window: the p95 prompt length, running
// requests (mean, and whether running sat at a ceiling), KV usage, finished requests per second
// and engine steps per second.
type BudgetInput struct {
	PromptP95, PromptP95Lower, PromptP95Upper float64
	Running, RunningMax                       float64
	AtCeiling                                 bool
	Usage                                     float64
	RequestRate, StepRate                     float64
	// Current is what the window shows of the budget (stepBudget), Source where from.
	Current Current
	Source  string
}

// BatchedTokens is a --max-num-batched-tokens that admits the waiting prefills: the decodes of
// the running requests (one token each) plus, per step, the prefills that arrive per step
// (request rate ÷ engine steps per second, at least one) each of the p95 prompt length
// (interpolated in its bucket, which the arithmetic shows), so that 95% of prefills complete in
// one step. When running sat at a ceiling (--max-num-seqs: its window maximum for half the window
// or more) it also states the --max-num-seqs the KV cache fits (running ÷ usage × (1 − KVHeadroom)).
// A budget that steps already reach beyond that value does not starve the prefills: the advice
// then says so, and points at --max-num-seqs or the instance's other findings.
func BatchedTokens(in BudgetInput) Recommendation {
	const flag = "--max-num-batched-tokens"
	if math.IsNaN(in.PromptP95) || in.PromptP95 <= 0 {
		return unknownRec(flag, "no prompt-length p95 in the window (vllm:request_prompt_tokens histogram)")
	}
	running := in.Running
	if math.IsNaN(running) {
		running = 0
	}
	perStep, rate := 1.0, "engine steps/s unknown (vllm:iteration_tokens_total), so 1 prefill per step"
	if in.RequestRate > 0 && in.StepRate > 0 {
		perStep = math.Max(1, math.Ceil(in.RequestRate/in.StepRate))
		rate = fmt.Sprintf("%s requests/s over %s steps/s = %s prefills per step", num(in.RequestRate), num(in.StepRate), num(perStep))
	}
	p95 := math.Ceil(in.PromptP95)
	v := math.Ceil(running) + perStep*p95
	bucket := ""
	if !math.IsNaN(in.PromptP95Lower) && !math.IsNaN(in.PromptP95Upper) {
		bucket = " in " + interval(in.PromptP95Lower, in.PromptP95Upper)
	}
	r := Recommendation{Flag: flag, Value: v,
		Effect: "each step can take the running decodes and a whole p95 prompt per arriving request, so prefills stop waiting for budget",
		Arithmetic: fmt.Sprintf("%s running decodes + %s × p95 prompt %s tokens%s (%s) = %s",
			num(math.Ceil(running)), num(perStep), whole(p95), bucket, rate, whole(v))}
	seqs := math.NaN()
	if in.AtCeiling && in.Usage > 0 && in.RunningMax > 0 {
		if s := floor((1 - KVHeadroom) * in.RunningMax / in.Usage); s > in.RunningMax {
			seqs = s
			r.Effect += fmt.Sprintf("; running sits at %s, so also --max-num-seqs %s, which the KV cache fits (%s × %s / usage %s)",
				num(in.RunningMax), whole(seqs), num(1-KVHeadroom), num(in.RunningMax), num(in.Usage))
		}
	}
	return r.settle(Raise, in.Current, in.Source, func() string {
		out := fmt.Sprintf("engine steps already take %s tokens, at least the %s the running decodes and the arriving p95 prompts need, so the budget does not hold prefills back", in.Current, whole(v))
		if !math.IsNaN(seqs) {
			return out + fmt.Sprintf("; running sits at %s: raise --max-num-seqs to %s, which the KV cache fits", num(in.RunningMax), whole(seqs))
		}
		return out + "; look at the other findings of this instance (requests waiting on LoRA slots, KV transfers, or long prefills)"
	})
}

// budgetAdvice is the --max-num-batched-tokens of token_budget_starved and
// queue_with_free_cache.
var budgetAdvice = recommender{
	reads:      []series.Signal{series.PromptLengthP95, series.Running, series.KVUsage, series.RequestRate, series.EngineStepRate},
	histograms: []string{vllm.IterationTokens},
	compute:    batchedTokens,
}

func batchedTokens(e *env, sp span) Recommendation {
	in := BudgetInput{PromptP95: e.meanOver(series.PromptLengthP95, sp.start, sp.end),
		PromptP95Lower: math.NaN(), PromptP95Upper: math.NaN(),
		Running: e.meanOver(series.Running, sp.start, sp.end), Usage: e.meanOver(series.KVUsage, sp.start, sp.end),
		RequestRate: e.meanOver(series.RequestRate, sp.start, sp.end), StepRate: e.meanOver(series.EngineStepRate, sp.start, sp.end),
		RunningMax: math.NaN()}
	in.Current, in.Source = stepBudget(e, sp)
	// Running held at its ceiling while steps carried more tokens than its decodes: the
	// sequence cap, not the budget, limited the steps, so they need not have filled it.
	if seqs, _ := runningCeiling(e, sp); seqs.Known() && seqs.Low == seqs.High && in.Current.Known() && in.Current.Low >= seqs.Low {
		in.Current = AtLeast(in.Current.Low)
		in.Source += fmt.Sprintf("; running sat at its ceiling of %s while steps carried more tokens than its decodes, so the steps need not have filled the budget", whole(seqs.Low))
	}
	if x := e.get(series.PromptLengthP95); x != nil && x.HasBounds() {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := sp.start; i <= sp.end; i++ {
			if !math.IsNaN(x.Lower[i]) {
				lo, hi = math.Min(lo, x.Lower[i]), math.Max(hi, x.Upper[i])
			}
		}
		if !math.IsInf(lo, 1) {
			in.PromptP95Lower, in.PromptP95Upper = lo, hi
		}
	}
	// Running sits at a ceiling when its window maximum is its value at half the steps or more.
	var vals []float64
	for i := sp.start; i <= sp.end; i++ {
		if v := e.at(series.Running, i); !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	if len(vals) > 0 {
		sort.Float64s(vals)
		top := vals[len(vals)-1]
		at := 0
		for _, v := range vals {
			if v == top {
				at++
			}
		}
		in.RunningMax, in.AtCeiling = top, top > 0 && 2*at >= len(vals)
	}
	return BatchedTokens(in)
}
