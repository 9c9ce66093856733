package series

// Signal names a version-independent vLLM signal (README, Queries, lists them). The names are
// part of the query model that dashboards persist; pkg/signals resolves each to the metric names
// a Prometheus holds.
type Signal string

// The signals. Quantiles are per instance and model over the rate window; means are
// rate(_sum)/rate(_count); ratios are ratios of rates.
const (
	TTFTP50            Signal = "ttft_p50"
	TTFTP90            Signal = "ttft_p90"
	TTFTP99            Signal = "ttft_p99"
	TTFTRatio          Signal = "ttft_ratio"
	ITLP50             Signal = "itl_p50"
	ITLP99             Signal = "itl_p99"
	TPOTP50            Signal = "tpot_p50"
	TPOTP99            Signal = "tpot_p99"
	TPOTMean           Signal = "tpot_mean"
	E2EP50             Signal = "e2e_p50"
	E2EP99             Signal = "e2e_p99"
	QueueTimeMean      Signal = "queue_time_mean"
	PrefillTimeMean    Signal = "prefill_time_mean"
	DecodeTimeMean     Signal = "decode_time_mean"
	PrefixCacheHitRate Signal = "prefix_cache_hit_rate"
	// PrefixCacheQueryTPS is the tokens looked up in the prefix cache per second: the hit
	// rate's denominator.
	PrefixCacheQueryTPS  Signal = "prefix_cache_query_tps"
	SpecAcceptanceRate   Signal = "spec_acceptance_rate"
	SpecAcceptanceLength Signal = "spec_acceptance_length"
	KVUsage              Signal = "kv_usage"
	// KVUsageAvg is KV usage averaged over the rate window: the cache's load over the same
	// span a rate covers, where the instantaneous gauge shows only the moment of the scrape.
	KVUsageAvg      Signal = "kv_usage_avg"
	PreemptionRate  Signal = "preemption_rate"
	Running         Signal = "running"
	Waiting         Signal = "waiting"
	WaitingRatio    Signal = "waiting_ratio"
	WaitingCapacity Signal = "waiting_capacity"
	WaitingDeferred Signal = "waiting_deferred"
	RequestRate     Signal = "request_rate"
	AbortRatio      Signal = "abort_ratio"
	// ErrorRatio is the share of finished requests that ended in an error (finished_reason
	// error), which availability objectives count as misses with the aborted ones.
	ErrorRatio    Signal = "error_ratio"
	PromptTPS     Signal = "prompt_tps"
	GenerationTPS Signal = "generation_tps"
	// RequestCount is the number of requests that got their first token within the rate window
	// ending at each step: the gate for quantile rules.
	RequestCount Signal = "request_count"
	// PromptLengthMean and OutputLengthMean are mean tokens per request over the window.
	PromptLengthMean Signal = "prompt_length_mean"
	OutputLengthMean Signal = "output_length_mean"
	// PromptLengthP95 is the 95th percentile of prompt tokens per request, with its bucket;
	// OutputLengthP95 the same of output tokens.
	PromptLengthP95 Signal = "prompt_length_p95"
	OutputLengthP95 Signal = "output_length_p95"
	// MaxTokensMean is the requests' mean max_tokens parameter over the window.
	MaxTokensMean Signal = "max_tokens_mean"
	// LengthRatio is the share of finished requests that stopped at max_tokens or the context
	// limit (finished_reason "length").
	LengthRatio Signal = "length_ratio"
	// SpecDraftLength is draft tokens proposed per draft: the speculative k in use.
	SpecDraftLength Signal = "spec_draft_length"
	// EngineStepRate is engine steps per second (observations of the tokens-per-step histogram).
	EngineStepRate Signal = "engine_step_rate"
)
