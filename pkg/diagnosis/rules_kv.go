package diagnosis

import (
	"fmt"
	"math"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The KV memory rules: a pool too small for the concurrency, held full or running out in bursts.
// Their ids are persisted in dashboards, alert rules and settings.
const (
	KVCacheSaturated     = "kv_cache_saturated"
	PreemptionsFreeCache = "preemptions_free_cache"
)

var kvCacheSaturated = Rule{
	ID:        KVCacheSaturated,
	Title:     "KV cache saturated",
	Symptom:   "requests preempted while the KV cache is nearly full",
	condition: "preemption rate > {preemption_rate}/s and KV usage > {kv_usage}",
	Severity:  Critical,
	Cause:     "not enough KV blocks for the concurrency",
	Action:    "lower --max-num-seqs or --max-model-len, or enable --kv-cache-dtype fp8",
	Promise: series.Promise{Signal: series.PreemptionRate, Direction: series.Down,
		Sentence: "preemptions per second fall toward 0: a concurrency the KV pool fits leaves no running request to evict"},
	Evidence: []series.Signal{series.KVUsage, series.PreemptionRate, series.Running, series.Waiting},
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
	recommend: kvAdvice(series.KVUsage),
	rank:      10,
	// Preemption by recompute puts the preempted requests back in the waiting queue, so a
	// saturated KV cache queues requests with the cache full by its own mechanism: that queue is
	// the saturation's, and its remedy (fewer or shorter sequences, fp8) comes before more
	// capacity. A queue with a full cache and no preemptions stays past_the_knee of its own.
	explains: []string{PastTheKnee},
	// Preempted requests wait in the queue again, are prefilled again, and stop decoding
	// meanwhile.
	lengthens: map[string]int{StageQueue: 10, StageDecode: 20, StagePrefill: 40},
}

var preemptionsFreeCache = Rule{
	ID:        PreemptionsFreeCache,
	Title:     "Preemptions with free KV cache",
	Symptom:   "requests preempted although the KV cache is not full",
	condition: "preemptions > {preemptions_per_minute}/min and KV usage averaged over the same window < {kv_usage}",
	Severity:  Warning,
	Cause:     "--max-num-seqs is too high for the KV cache: admitted sequences outgrow it as they decode",
	Action:    "lower --max-num-seqs or --max-model-len",
	Promise: series.Promise{Signal: series.PreemptionRate, Direction: series.Down,
		Sentence: "preemptions per second fall toward 0: a concurrency the KV pool fits at its bursts leaves no running request to evict"},
	Evidence: []series.Signal{series.PreemptionRate, series.KVUsageAvg, series.KVUsage, series.Running},
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
	recommend: kvAdvice(series.KVUsageAvg),
	rank:      20,
	// As kv_cache_saturated's, in bursts.
	lengthens: map[string]int{StageDecode: 30, StageQueue: 40, StagePrefill: 50},
}

// KVHeadroom is the share of the KV pool a recommended --max-num-seqs leaves free: sequences
// grow as they decode, and arrivals bunch.
const KVHeadroom = 0.1

// KVInput is what KVFit reads: the pool (vllm:cache_config_info), the KV usage and running
// requests averaged over the window, and the mean prompt and output lengths.
type KVInput struct {
	Blocks, BlockSize      int
	CacheDType             string
	Usage, Running         float64
	PromptMean, OutputMean float64
	// Current is what the window shows of --max-num-seqs (runningCeiling), Source where from.
	Current Current
	Source  string
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
// A fit at or above the running requests seen would not lower anything that ran: the
// preemptions then come from sequences longer than the window's mean, and --max-model-len or
// fp8 is what to look at.
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
	fp8 := ""
	if dt := strings.ToLower(in.CacheDType); dt == "auto" || dt == "" {
		tokens := ""
		if !math.IsNaN(pool) {
			tokens = fmt.Sprintf(", %s tokens", whole(2*pool))
		}
		fp8 = fmt.Sprintf("--kv-cache-dtype fp8 (cache_dtype is %s): about 2× the pool%s, fitting %s", orUnknown(in.CacheDType), tokens, whole(floor((1-KVHeadroom)*2/share)))
		r.Effect += "; or " + fp8
	}
	return r.settle(Lower, in.Current, in.Source, func() string {
		out := fmt.Sprintf("no more requests ran (%s) than the %s the KV cache fits on average, so --max-num-seqs does not bind: "+
			"the preemptions come from requests longer than the window's mean; lower --max-model-len", in.Current, whole(fit))
		if fp8 != "" {
			out += ", or " + fp8
		}
		return out
	})
}

func orUnknown(s string) string {
	if s == "" {
		return "not stated"
	}
	return s
}

// kvAdvice is the --max-num-seqs that fits the KV pool, from the KV usage signal the rule reads
// (the gauge for kv_cache_saturated, its window mean for preemptions_free_cache).
func kvAdvice(usage series.Signal) recommender {
	return recommender{
		reads: []series.Signal{usage, series.Running, series.PromptLengthMean, series.OutputLengthMean},
		compute: func(e *env, sp span) Recommendation {
			c, _ := e.cacheConfig()
			cur, source := runningCeiling(e, sp)
			return KVFit(KVInput{Blocks: c.NumGPUBlocks, BlockSize: c.BlockSize, CacheDType: c.CacheDType, Current: cur, Source: source,
				Usage: e.meanOver(usage, sp.start, sp.end), Running: e.meanOver(series.Running, sp.start, sp.end),
				PromptMean: e.meanOver(series.PromptLengthMean, sp.start, sp.end), OutputMean: e.meanOver(series.OutputLengthMean, sp.start, sp.end)})
		},
	}
}
