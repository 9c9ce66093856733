// Package vllm holds vLLM's telemetry vocabulary: the metric names of each generation as
// Prometheus scrapes them, their types, help texts and buckets, the span attribute keys, and
// the detection of which generation a Prometheus holds. It is data, not logic.
package vllm

// Metric names as scraped: counters carry their _total suffix, histograms are the family name
// (query <name>_bucket, _sum and _count).
const (
	RequestsRunning         = "vllm:num_requests_running"
	RequestsWaiting         = "vllm:num_requests_waiting"
	RequestsWaitingByReason = "vllm:num_requests_waiting_by_reason"
	KVCacheUsage            = "vllm:kv_cache_usage_perc"
	PrefixCacheQueries      = "vllm:prefix_cache_queries_total"
	PrefixCacheHits         = "vllm:prefix_cache_hits_total"
	Preemptions             = "vllm:num_preemptions_total"
	PromptTokens            = "vllm:prompt_tokens_total"
	GenerationTokens        = "vllm:generation_tokens_total"
	PromptTokensCached      = "vllm:prompt_tokens_cached_total"
	RequestSuccess          = "vllm:request_success_total"
	TimeToFirstToken        = "vllm:time_to_first_token_seconds"
	InterTokenLatency       = "vllm:inter_token_latency_seconds"
	RequestTimePerToken     = "vllm:request_time_per_output_token_seconds"
	E2ELatency              = "vllm:e2e_request_latency_seconds"
	QueueTime               = "vllm:request_queue_time_seconds"
	PrefillTime             = "vllm:request_prefill_time_seconds"
	DecodeTime              = "vllm:request_decode_time_seconds"
	InferenceTime           = "vllm:request_inference_time_seconds"
	RequestPromptTokens     = "vllm:request_prompt_tokens"
	RequestGenerationTokens = "vllm:request_generation_tokens"
	RequestParamsMaxTokens  = "vllm:request_params_max_tokens"
	IterationTokens         = "vllm:iteration_tokens_total"
	CacheConfigInfo         = "vllm:cache_config_info"
	SpecDrafts              = "vllm:spec_decode_num_drafts_total"
	SpecDraftTokens         = "vllm:spec_decode_num_draft_tokens_total"
	SpecAcceptedTokens      = "vllm:spec_decode_num_accepted_tokens_total"
	SpecAcceptedPerPos      = "vllm:spec_decode_num_accepted_tokens_per_pos_total"

	// Older names: the V0 engine, and V1 releases up to 0.11.
	GPUCacheUsage           = "vllm:gpu_cache_usage_perc"
	GPUPrefixCacheQueries   = "vllm:gpu_prefix_cache_queries_total"
	GPUPrefixCacheHits      = "vllm:gpu_prefix_cache_hits_total"
	GPUPrefixCacheHitRate   = "vllm:gpu_prefix_cache_hit_rate"
	SpecAcceptanceRateV0    = "vllm:spec_decode_draft_acceptance_rate"
	SpecEfficiencyV0        = "vllm:spec_decode_efficiency"
	TimePerOutputToken      = "vllm:time_per_output_token_seconds"
	TimeInQueueRequests     = "vllm:time_in_queue_requests"
	CPUCacheUsage           = "vllm:cpu_cache_usage_perc"
	RequestsSwapped         = "vllm:num_requests_swapped"
	AvgPromptThroughput     = "vllm:avg_prompt_throughput_toks_per_s"
	AvgGenerationThroughput = "vllm:avg_generation_throughput_toks_per_s"
)

// Labels that vLLM sets on its series (Prometheus adds instance and job).
const (
	LabelModelName      = "model_name"
	LabelEngine         = "engine"
	LabelFinishedReason = "finished_reason"
	LabelReason         = "reason"
	LabelPosition       = "position"
)

// Finished reasons of vllm:request_success_total; vLLM pre-creates every one at 0.
var FinishedReasons = []string{"stop", "length", "abort", "error", "repetition"}

// Type is a Prometheus metric type.
type Type string

// The metric types vLLM uses.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Metric describes one metric family: how it is scraped, which vLLM releases export it and,
// for histograms, the bucket bounds vLLM registers.
type Metric struct {
	Name    string
	Type    Type
	Help    string
	Labels  []string // extra labels beyond model_name and engine
	Since   string   // the first vLLM release that exports it, as users know it
	Until   string   // the last release that exports it; empty while current
	Buckets []float64
	// NoModel marks families without the model_name label (cache_config_info).
	NoModel bool
}

// Bucket bounds of vLLM's histograms, in seconds or tokens.
var (
	TTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	// TokenLatencyBuckets serve inter-token latency and per-request time per output token.
	TokenLatencyBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10, 20, 40, 80}
	// RequestLatencyBuckets serve end-to-end, queue, prefill, decode and inference times.
	RequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	IterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// Current lists the families of the current generation (vLLM ≥ 0.12), in exposition order.
var Current = []Metric{
	{Name: RequestsRunning, Type: Gauge, Help: "Number of requests in model execution batches.", Since: "0.5"},
	{Name: RequestsWaiting, Type: Gauge, Help: "Number of requests waiting to be processed.", Since: "0.5"},
	{Name: RequestsWaitingByReason, Type: Gauge, Labels: []string{LabelReason}, Since: "0.20",
		Help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting."},
	{Name: KVCacheUsage, Type: Gauge, Help: "KV-cache usage. 1 means 100 percent usage.", Since: "0.9.2"},
	{Name: PrefixCacheQueries, Type: Counter, Help: "Prefix cache queries, in terms of number of queried tokens.", Since: "0.10"},
	{Name: PrefixCacheHits, Type: Counter, Help: "Prefix cache hits, in terms of number of cached tokens.", Since: "0.10"},
	{Name: Preemptions, Type: Counter, Help: "Cumulative number of preemption from the engine.", Since: "0.5"},
	{Name: PromptTokens, Type: Counter, Help: "Number of prefill tokens processed.", Since: "0.5"},
	{Name: PromptTokensCached, Type: Counter, Help: "Number of cached prompt tokens (local + external).", Since: "0.20"},
	{Name: GenerationTokens, Type: Counter, Help: "Number of generation tokens processed.", Since: "0.5"},
	{Name: RequestSuccess, Type: Counter, Labels: []string{LabelFinishedReason}, Help: "Count of successfully processed requests.", Since: "0.5"},
	{Name: RequestPromptTokens, Type: Histogram, Help: "Number of prefill tokens processed.", Since: "0.5"},
	{Name: RequestGenerationTokens, Type: Histogram, Help: "Number of generation tokens processed.", Since: "0.5"},
	// The oldest real capture that prints it is a 0.10 V1 server's.
	{Name: RequestParamsMaxTokens, Type: Histogram, Help: "Histogram of the max_tokens request parameter.", Since: "0.10"},
	{Name: IterationTokens, Type: Histogram, Help: "Histogram of number of tokens per engine_step.", Since: "0.5", Buckets: IterationTokenBuckets},
	{Name: TimeToFirstToken, Type: Histogram, Help: "Histogram of time to first token in seconds.", Since: "0.5", Buckets: TTFTBuckets},
	{Name: InterTokenLatency, Type: Histogram, Help: "Histogram of inter-token latency in seconds.", Since: "0.11", Buckets: TokenLatencyBuckets},
	{Name: RequestTimePerToken, Type: Histogram, Help: "Histogram of time_per_output_token_seconds per request.", Since: "0.11", Buckets: TokenLatencyBuckets},
	{Name: E2ELatency, Type: Histogram, Help: "Histogram of e2e request latency in seconds.", Since: "0.5", Buckets: RequestLatencyBuckets},
	{Name: QueueTime, Type: Histogram, Help: "Histogram of time spent in WAITING phase for request.", Since: "0.8", Buckets: RequestLatencyBuckets},
	{Name: InferenceTime, Type: Histogram, Help: "Histogram of time spent in RUNNING phase for request.", Since: "0.8", Buckets: RequestLatencyBuckets},
	{Name: PrefillTime, Type: Histogram, Help: "Histogram of time spent in PREFILL phase for request.", Since: "0.8", Buckets: RequestLatencyBuckets},
	{Name: DecodeTime, Type: Histogram, Help: "Histogram of time spent in DECODE phase for request.", Since: "0.8", Buckets: RequestLatencyBuckets},
	{Name: CacheConfigInfo, Type: Gauge, Help: "Information of the LLMEngine CacheConfig", Since: "0.5", NoModel: true},
	{Name: SpecDrafts, Type: Counter, Help: "Number of spec decoding drafts.", Since: "0.8"},
	{Name: SpecDraftTokens, Type: Counter, Help: "Number of draft tokens.", Since: "0.8"},
	{Name: SpecAcceptedTokens, Type: Counter, Help: "Number of accepted tokens.", Since: "0.8"},
	{Name: SpecAcceptedPerPos, Type: Counter, Labels: []string{LabelPosition}, Help: "Accepted tokens per draft position.", Since: "0.8"},
}

// V0 lists the families of the V0 engine (vLLM 0.5 to 0.10) that differ from, or are gone in,
// the current generation; the rest of a V0 exposition uses the current names.
var V0 = []Metric{
	{Name: GPUCacheUsage, Type: Gauge, Help: "GPU KV-cache usage. 1 means 100 percent usage.", Since: "0.5", Until: "0.11"},
	{Name: CPUCacheUsage, Type: Gauge, Help: "CPU KV-cache usage. 1 means 100 percent usage.", Since: "0.5", Until: "0.10"},
	{Name: RequestsSwapped, Type: Gauge, Help: "Number of requests swapped to CPU.", Since: "0.5", Until: "0.10"},
	{Name: GPUPrefixCacheHitRate, Type: Gauge, Help: "GPU prefix cache block hit rate.", Since: "0.5", Until: "0.10"},
	{Name: GPUPrefixCacheQueries, Type: Counter, Help: "GPU prefix cache queries, in terms of number of queried tokens.", Since: "0.8", Until: "0.11"},
	{Name: GPUPrefixCacheHits, Type: Counter, Help: "GPU prefix cache hits, in terms of number of cached tokens.", Since: "0.8", Until: "0.11"},
	{Name: SpecAcceptanceRateV0, Type: Gauge, Help: "Speculative token acceptance rate.", Since: "0.5", Until: "0.10"},
	{Name: SpecEfficiencyV0, Type: Gauge, Help: "Speculative decoding system efficiency.", Since: "0.5", Until: "0.10"},
	{Name: TimePerOutputToken, Type: Histogram, Help: "Histogram of time per output token in seconds.", Since: "0.5", Until: "0.15", Buckets: TokenLatencyBuckets},
	{Name: TimeInQueueRequests, Type: Histogram, Help: "Histogram of time the request spent in the queue in seconds.", Since: "0.6", Until: "0.10", Buckets: RequestLatencyBuckets},
	{Name: AvgPromptThroughput, Type: Gauge, Help: "Average prefill throughput in tokens/s.", Since: "0.5", Until: "0.6"},
	{Name: AvgGenerationThroughput, Type: Gauge, Help: "Average generation throughput in tokens/s.", Since: "0.5", Until: "0.6"},
}

var byName = func() map[string]Metric {
	m := make(map[string]Metric, len(Current)+len(V0))
	for _, list := range [][]Metric{Current, V0} {
		for _, x := range list {
			m[x.Name] = x
		}
	}
	return m
}()

// Lookup returns the description of a metric family by its scraped name.
func Lookup(name string) (Metric, bool) {
	m, ok := byName[name]
	return m, ok
}

// Availability says in words which vLLM releases export a metric, for notices.
func Availability(name string) string {
	m, ok := byName[name]
	switch {
	case !ok:
		return "not a vLLM metric this plugin knows"
	case m.Until != "":
		return "exported by vLLM " + m.Since + " to " + m.Until
	default:
		return "exported by vLLM " + m.Since + " and later"
	}
}
