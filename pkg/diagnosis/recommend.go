package diagnosis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Recommendation is the value a finding's action should set, computed from the instance's own
// configuration and traffic over the finding's window. When a number cannot be had, Value is
// NaN and Missing names the metric or vLLM version that is absent; the finding's Action still
// names the flag.
type Recommendation struct {
	// Flag is the vLLM flag (or, for prefix_cache_miss, the quantity) the value is for.
	Flag  string
	Value float64
	// Effect is what setting it should do.
	Effect string
	// Arithmetic is the computation in one line a person can check.
	Arithmetic string
	// Missing names what is absent when Value is NaN.
	Missing string
}

// Known reports whether the recommendation carries a value.
func (r Recommendation) Known() bool { return r.Flag != "" && !math.IsNaN(r.Value) }

// String is the recommendation in one line: flag and value, effect, arithmetic; or what is
// missing; empty for a rule without recommendations.
func (r Recommendation) String() string {
	switch {
	case r.Known():
		return fmt.Sprintf("%s %s: %s (%s)", r.Flag, whole(r.Value), r.Effect, r.Arithmetic)
	case r.Missing != "":
		return "no value: " + r.Missing
	}
	return ""
}

func unknownRec(flag, missing string) Recommendation {
	return Recommendation{Flag: flag, Value: math.NaN(), Missing: missing}
}

// KVHeadroom is the share of the KV pool a recommended --max-num-seqs leaves free: sequences
// grow as they decode, and arrivals bunch.
const KVHeadroom = 0.1

// DraftOverhead is the cost of one draft token as a share of a target model step: a drafter
// about 1/20 of the target's size plus the verification of its token. It is the stated
// overhead of the speedup estimate (1 + α·k) / (1 + DraftOverhead·k).
const DraftOverhead = 0.05

// KVInput is what KVFit reads: the pool (vllm:cache_config_info), the KV usage and running
// requests averaged over the window, and the mean prompt and output lengths.
type KVInput struct {
	Blocks, BlockSize      int
	CacheDType             string
	Usage, Running         float64
	PromptMean, OutputMean float64
}

// KVFit is the --max-num-seqs whose requests fit the KV pool with KVHeadroom to spare. The
// pool holds Blocks × BlockSize tokens; a running request holds Usage ÷ Running of it on
// average (prefix blocks shared between requests counted once), shown beside PromptMean +
// OutputMean / 2 tokens (a request holds its prompt and, on average over its decode, half its
// output); --max-num-seqs = ⌊(1 − KVHeadroom) ÷ share⌋. The measured share is used when known,
// and then does not depend on the pool's size (vllm:cache_config_info is the newest of the
// range: after a redeploy with another pool, the tokens shown are the new pool's); the lengths
// over the pool otherwise. With
// cache_dtype auto, the fp8 alternative (twice the blocks in the same memory) is stated too.
func KVFit(in KVInput) Recommendation {
	const flag = "--max-num-seqs"
	pool, poolText := math.NaN(), "pool unknown (no num_gpu_blocks, block_size in vllm:cache_config_info)"
	if in.Blocks > 0 && in.BlockSize > 0 {
		pool = float64(in.Blocks * in.BlockSize)
		poolText = fmt.Sprintf("pool %d blocks × %d = %s tokens", in.Blocks, in.BlockSize, whole(pool))
	}
	lengths := in.PromptMean + in.OutputMean/2
	var share float64 // of the pool one running request holds
	var how string
	switch {
	case in.Running > 0 && in.Usage > 0:
		// Measured, the share does not depend on the pool's size: usage is already a fraction.
		share = in.Usage / in.Running
		how = fmt.Sprintf("KV usage %s / %s running = %s of the pool per request", num(in.Usage), num(in.Running), num(share))
		if !math.IsNaN(pool) {
			how += fmt.Sprintf(" (%s tokens)", whole(math.Round(share*pool)))
		}
		if !math.IsNaN(lengths) {
			how += fmt.Sprintf(", lengths say prompt %s + output %s / 2 = %s", whole(math.Round(in.PromptMean)), whole(math.Round(in.OutputMean)), whole(math.Round(lengths)))
		}
	case lengths > 0 && math.IsNaN(pool):
		return unknownRec(flag, "no KV usage per running request in the window, and vllm:cache_config_info (num_gpu_blocks, block_size) is missing for this instance, so the prompt and output lengths cannot be set against the pool")
	case lengths > 0:
		share = lengths / pool
		how = fmt.Sprintf("no KV usage per running request: prompt %s + output %s / 2 = %s tokens = %s of the pool per request", whole(math.Round(in.PromptMean)), whole(math.Round(in.OutputMean)), whole(math.Round(lengths)), num(share))
	default:
		return unknownRec(flag, "neither KV usage with running requests nor the prompt and output lengths (vllm:request_prompt_tokens, vllm:request_generation_tokens) have data in the window")
	}
	fit := math.Max(1, floor((1-KVHeadroom)/share))
	r := Recommendation{Flag: flag, Value: fit,
		Effect:     fmt.Sprintf("the requests that fit the KV cache with %.0f%% to spare, so they stop being preempted", 100*KVHeadroom),
		Arithmetic: fmt.Sprintf("%s; %s; %s / %s = %s", poolText, how, num(1-KVHeadroom), num(share), whole(fit))}
	if dt := strings.ToLower(in.CacheDType); dt == "auto" || dt == "" {
		fp8 := floor((1 - KVHeadroom) * 2 / share)
		tokens := ""
		if !math.IsNaN(pool) {
			tokens = fmt.Sprintf(", %s tokens", whole(2*pool))
		}
		r.Effect += fmt.Sprintf("; or --kv-cache-dtype fp8 (cache_dtype is %s): about 2× the pool%s, fitting %s", orUnknown(in.CacheDType), tokens, whole(fp8))
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "not stated"
	}
	return s
}

// SpecInput is what SpecDraft reads: the acceptance rate α (accepted over proposed draft
// tokens) and the draft length k (draft tokens per draft), averaged over the window.
type SpecInput struct {
	Acceptance, DraftLength float64
	Overhead                float64
}

// SpecDraft is the num_speculative_tokens that maximises the speedup estimate
// (1 + accepted per draft) / (1 + Overhead·k). vLLM accepts draft tokens in order until the
// first rejection, so with p the acceptance at each position the accepted tokens per draft of
// length k are p + p² + … + p^k; measured, they are α·k, which gives p. The estimate is then
// evaluated for every k' from 0 (no speculation: 1) to k: the best is kept (k), a shorter
// draft, or 0 (disable).
func SpecDraft(in SpecInput) Recommendation {
	const flag = "--speculative-config num_speculative_tokens"
	switch {
	case math.IsNaN(in.Acceptance):
		return unknownRec(flag, "no draft acceptance rate in the window (vllm:spec_decode_num_accepted_tokens_total)")
	case !(in.DraftLength >= 1):
		return unknownRec(flag, "no draft length in the window (vllm:spec_decode_num_drafts_total, vLLM 0.8 or later)")
	}
	k := int(math.Round(in.DraftLength))
	accepted := in.Acceptance * in.DraftLength
	p := positionAcceptance(accepted, k)
	speedup := func(j int) float64 {
		gain, pi := 1.0, 1.0
		for range j {
			pi *= p
			gain += pi
		}
		return gain / (1 + in.Overhead*float64(j))
	}
	best := 0
	for j := 1; j <= k; j++ {
		if speedup(j) > speedup(best) {
			best = j
		}
	}
	r := Recommendation{Flag: flag, Value: float64(best),
		Arithmetic: fmt.Sprintf("α %s × k %s = %s accepted per draft, so acceptance %s per position; speedup (1 + %s) / (1 + %s × %d) = %s now, %s at k = %d",
			num(in.Acceptance), num(in.DraftLength), num(accepted), num(p), num(accepted), num(in.Overhead), k, num(speedup(k)), num(speedup(best)), best)}
	switch {
	case best == 0:
		r.Effect = "disable speculative decoding: every draft length costs more than it saves"
	case best == k:
		r.Effect = fmt.Sprintf("keep k = %d: speculation still pays (estimated ×%s)", k, num(speedup(k)))
	default:
		r.Effect = fmt.Sprintf("shorten the draft from %d to %d tokens: estimated ×%s instead of ×%s", k, best, num(speedup(best)), num(speedup(k)))
	}
	return r
}

// positionAcceptance solves p + p² + … + p^k = accepted for p in [0, 1] by bisection.
func positionAcceptance(accepted float64, k int) float64 {
	if accepted <= 0 {
		return 0
	}
	if accepted >= float64(k) {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		sum, pi := 0.0, 1.0
		for range k {
			pi *= mid
			sum += pi
		}
		if sum < accepted {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Round((lo+hi)/2*1000) / 1000
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
}

// BatchedTokens is a --max-num-batched-tokens that admits the waiting prefills: the decodes of
// the running requests (one token each) plus, per step, the prefills that arrive per step
// (request rate ÷ engine steps per second, at least one) each of the p95 prompt length, so
// that 95% of prefills complete in one step. When running sat at a ceiling (--max-num-seqs) it
// also states the --max-num-seqs the KV cache fits (running ÷ usage × (1 − KVHeadroom)).
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
	if in.AtCeiling && in.Usage > 0 && in.RunningMax > 0 {
		seqs := floor((1 - KVHeadroom) * in.RunningMax / in.Usage)
		if seqs > in.RunningMax {
			r.Effect += fmt.Sprintf("; running sits at %s, so also --max-num-seqs %s, which the KV cache fits (%s × %s / usage %s)",
				num(in.RunningMax), whole(seqs), num(1-KVHeadroom), num(in.RunningMax), num(in.Usage))
		}
	}
	return r
}

// KneeInput is what InstancesNeeded reads: the arrival rate over the finding and the highest
// request rate the instance held, within the range, while waiting stayed below 10% of running.
type KneeInput struct {
	Finished, QueueGrowth float64
	Held                  float64
}

// InstancesNeeded is how many instances to add: arrivals (finished requests per second plus
// the queue's growth per second, from the finding's start to the queue's peak) over the rate
// one instance held without a queue, rounded up, less this instance.
func InstancesNeeded(in KneeInput) Recommendation {
	const flag = "add instances"
	if math.IsNaN(in.Finished) {
		return unknownRec(flag, "no request rate in the window (vllm:request_success_total)")
	}
	if !(in.Held > 0) {
		return unknownRec(flag, "the range holds no step where this instance ran with waiting below 10% of running, so the rate one instance holds is unknown: widen the range to include healthy traffic")
	}
	growth := in.QueueGrowth
	if math.IsNaN(growth) {
		growth = 0
	}
	arrival := in.Finished + growth
	need := math.Max(1, math.Ceil(arrival/in.Held))
	return Recommendation{Flag: flag, Value: need - 1,
		Effect: fmt.Sprintf("%s instances of this capacity carry the load with a short queue", num(need)),
		Arithmetic: fmt.Sprintf("arrivals %s/s finished + %s/s queue growth = %s/s; one instance held %s/s with waiting < 10%% of running; ⌈%s / %s⌉ = %s instances, %s more",
			num(in.Finished), num(growth), num(arrival), num(in.Held), num(arrival), num(in.Held), num(need), num(need-1))}
}

// PrefixInput is what PrefixReuse reads: the hit rate now and the one to expect (before the
// fault, or on healthy peers serving the same model, Source says which), the mean prompt
// length and prefill time now, and the KV block size.
type PrefixInput struct {
	HitNow, HitExpected float64
	Source              string
	PromptMean          float64
	PrefillMean         float64
	BlockSize           int
}

// PrefixReuse is the prefix-cache hit rate to expect once the shared prefix is identical, and
// the prefill time the misses cost per request: the missed tokens per request ((expected − now)
// × mean prompt) at the prefill time per computed token now (mean prefill ÷ (mean prompt ×
// (1 − hit now))). Fewer cached tokens per request than one KV block means the shared prefix
// is shorter than a block, which vLLM can never reuse.
func PrefixReuse(in PrefixInput) Recommendation {
	const flag = "prefix-cache hit rate"
	switch {
	case math.IsNaN(in.HitExpected):
		return unknownRec(flag, "no hit rate to expect: too little prefix-cache data in the hour before the finding and no healthy peer serving the same model")
	case math.IsNaN(in.HitNow) || math.IsNaN(in.PromptMean):
		return unknownRec(flag, "no hit rate or prompt length in the window (vllm:prefix_cache_hits_total, vllm:request_prompt_tokens)")
	}
	missed := math.Max(0, in.HitExpected-in.HitNow) * in.PromptMean
	r := Recommendation{Flag: flag, Value: round3(in.HitExpected)}
	cost := math.NaN()
	if computed := in.PromptMean * (1 - in.HitNow); computed > 0 && in.PrefillMean > 0 {
		cost = missed * in.PrefillMean / computed
		r.Effect = fmt.Sprintf("an identical shared prefix saves about %s of prefill per request", secondsText(cost))
		r.Arithmetic = fmt.Sprintf("(%s %s − %s now) × %s prompt tokens = %s tokens missed per request; × %s prefill / %s computed tokens = %s",
			num(in.HitExpected), in.Source, num(in.HitNow), whole(math.Round(in.PromptMean)), whole(math.Round(missed)), secondsText(in.PrefillMean), whole(math.Round(computed)), secondsText(cost))
	} else {
		r.Effect = "an identical shared prefix brings the hit rate back"
		r.Arithmetic = fmt.Sprintf("(%s %s − %s now) × %s prompt tokens = %s tokens missed per request (no prefill time to price them)",
			num(in.HitExpected), in.Source, num(in.HitNow), whole(math.Round(in.PromptMean)), whole(math.Round(missed)))
	}
	if in.BlockSize > 0 {
		cached := in.HitExpected * in.PromptMean
		if cached < float64(in.BlockSize) {
			r.Effect += fmt.Sprintf("; the prefix shared %s is %s tokens, shorter than one KV block (%d): vLLM never reuses it, lengthen it past %d tokens", in.Source, whole(math.Round(cached)), in.BlockSize, in.BlockSize)
		} else {
			r.Arithmetic += fmt.Sprintf("; %s tokens cached per request %s, %s KV blocks of %d", whole(math.Round(cached)), in.Source, num(math.Floor(cached/float64(in.BlockSize))), in.BlockSize)
		}
	}
	return r
}

// floor rounds down, forgiving the last bits of floating point (44.99999999 is 45).
func floor(v float64) float64 { return math.Floor(v + 1e-9*math.Abs(v)) }

// whole prints a count of tokens, requests or sequences without an exponent; fractions as num.
func whole(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return num(v)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func secondsText(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", 1000*v)
	}
	return fmt.Sprintf("%.2f s", v)
}

// recommenders compute each rule's recommendation from a finding's window.
var recommenders = map[string]func(e *env, sp span) Recommendation{
	KVCacheSaturated:      func(e *env, sp span) Recommendation { return kvFit(e, sp, series.KVUsage) },
	PreemptionsFreeCache:  func(e *env, sp span) Recommendation { return kvFit(e, sp, series.KVUsageAvg) },
	SpecDecodeInefficient: specDraft,
	QueueWithFreeCache:    batchedTokens,
	TokenBudgetStarved:    batchedTokens,
	PastTheKnee:           instancesNeeded,
	PrefixCacheMiss:       prefixReuse,
}

// recommendSignals are the signals the recommendations read beyond the rules' own.
var recommendSignals = map[string][]series.Signal{
	KVCacheSaturated:      {series.KVUsage, series.Running, series.PromptLengthMean, series.OutputLengthMean},
	PreemptionsFreeCache:  {series.KVUsageAvg, series.Running, series.PromptLengthMean, series.OutputLengthMean},
	SpecDecodeInefficient: {series.SpecAcceptanceRate, series.SpecDraftLength},
	QueueWithFreeCache:    {series.PromptLengthP95, series.Running, series.KVUsage, series.RequestRate, series.EngineStepRate},
	TokenBudgetStarved:    {series.PromptLengthP95, series.Running, series.KVUsage, series.RequestRate, series.EngineStepRate},
	PastTheKnee:           {series.RequestRate, series.Running, series.Waiting},
	PrefixCacheMiss:       {series.PrefixCacheHitRate, series.PromptLengthMean, series.PrefillTimeMean},
}

func recommendFor(e *env, sp span) Recommendation {
	if f := recommenders[e.rule.ID]; f != nil {
		return f(e, sp)
	}
	return Recommendation{Value: math.NaN()}
}

// meanOver is a signal's mean over steps [from, to], NaN steps skipped.
func (e *env) meanOver(s series.Signal, from, to int) float64 {
	sum, n := 0.0, 0
	for i := from; i <= to; i++ {
		if v := e.at(s, i); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func kvFit(e *env, sp span, usage series.Signal) Recommendation {
	c, _ := e.cacheConfig()
	return KVFit(KVInput{Blocks: c.NumGPUBlocks, BlockSize: c.BlockSize, CacheDType: c.CacheDType,
		Usage: e.meanOver(usage, sp.start, sp.end), Running: e.meanOver(series.Running, sp.start, sp.end),
		PromptMean: e.meanOver(series.PromptLengthMean, sp.start, sp.end), OutputMean: e.meanOver(series.OutputLengthMean, sp.start, sp.end)})
}

func specDraft(e *env, sp span) Recommendation {
	return SpecDraft(SpecInput{Acceptance: e.meanOver(series.SpecAcceptanceRate, sp.start, sp.end),
		DraftLength: e.meanOver(series.SpecDraftLength, sp.start, sp.end), Overhead: DraftOverhead})
}

func batchedTokens(e *env, sp span) Recommendation {
	in := BudgetInput{PromptP95: e.meanOver(series.PromptLengthP95, sp.start, sp.end),
		PromptP95Lower: math.NaN(), PromptP95Upper: math.NaN(),
		Running: e.meanOver(series.Running, sp.start, sp.end), Usage: e.meanOver(series.KVUsage, sp.start, sp.end),
		RequestRate: e.meanOver(series.RequestRate, sp.start, sp.end), StepRate: e.meanOver(series.EngineStepRate, sp.start, sp.end),
		RunningMax: math.NaN()}
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

func instancesNeeded(e *env, sp span) Recommendation {
	g := e.set.Grid
	// Arrivals are measured while the queue grew: from the finding's start to the step where
	// waiting peaked (a finding that lasts until the queue drains again grows by nothing).
	top, peak := sp.start, math.Inf(-1)
	for i := sp.start; i <= sp.end; i++ {
		if w := e.at(series.Waiting, i); w > peak {
			top, peak = i, w
		}
	}
	in := KneeInput{Finished: e.meanOver(series.RequestRate, sp.start, top), QueueGrowth: math.NaN()}
	if dur := g.Time(top).Sub(g.Time(sp.start)).Seconds(); dur > 0 {
		in.QueueGrowth = (peak - e.at(series.Waiting, sp.start)) / dur
	}
	for i := 0; i < g.Len; i++ {
		r, w, rate := e.at(series.Running, i), e.at(series.Waiting, i), e.at(series.RequestRate, i)
		if r > 0 && w < 0.1*r && rate > in.Held {
			in.Held = rate
		}
	}
	return InstancesNeeded(in)
}

func prefixReuse(e *env, sp span) Recommendation {
	c, _ := e.cacheConfig()
	in := PrefixInput{HitNow: e.meanOver(series.PrefixCacheHitRate, sp.start, sp.end),
		PromptMean: e.meanOver(series.PromptLengthMean, sp.start, sp.end), PrefillMean: e.meanOver(series.PrefillTimeMean, sp.start, sp.end),
		BlockSize: c.BlockSize, HitExpected: e.baseline(series.PrefixCacheHitRate, false).value[sp.start], Source: "in the hour before"}
	if math.IsNaN(in.HitExpected) || in.HitExpected < e.p("hit_rate") {
		// Healthy peers: other instances serving the same model whose hit rate over the same
		// window stayed at or above the rule's threshold; their median.
		var peers []float64
		for _, k := range e.set.Keys() {
			if k.Model != e.key.Model || k.Instance == e.key.Instance {
				continue
			}
			peer := &env{set: e.set, key: k}
			if v := peer.meanOver(series.PrefixCacheHitRate, sp.start, sp.end); v >= e.p("hit_rate") {
				peers = append(peers, v)
			}
		}
		if len(peers) > 0 {
			sort.Float64s(peers)
			in.HitExpected, in.Source = sortedWindow(peers).median(), fmt.Sprintf("on %d healthy peers of the model", len(peers))
		} else if !math.IsNaN(in.HitExpected) {
			in.HitExpected = math.NaN()
		}
	}
	return PrefixReuse(in)
}
