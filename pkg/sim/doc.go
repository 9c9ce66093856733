// Package sim simulates vLLM servers step by step and produces the telemetry a real fleet
// would: Prometheus scrapes with vLLM's exact metric names, types, help texts, labels and
// buckets (package vllm), one OTLP span per finished request, and the ground truth of the
// faults it injected.
//
// Each instance runs a model of vLLM's V1 engine core: continuous batching under a token
// budget (max_num_batched_tokens) and max_num_seqs, chunked prefill or whole-prompt prefill, a
// KV block pool with prefix caching by block and preemption by recompute, speculative decoding
// with per-token acceptance, client timeouts that abort requests, and a step cost model (fixed
// overhead, per prefill token, per decoding sequence, per context token read). Faults change an
// instance's configuration or load over an interval; their symptoms arise from the model, and
// the ground truth is computed from the model's own state, never from the metrics.
//
// Run simulates without sleeping (an hour of four busy instances takes seconds); Serve paces
// the same model to the wall clock and serves each instance's /metrics on its own port.
//
// Conventions a caller relies on:
//   - The Prometheus instance label is the instance's host:port; job is "vllm". Spans carry it
//     as the resource attribute service.instance.id, so traces join metrics.
//   - V1 (default): the current names with engine="0". V0 (Scenario.Generation "v0"): the V0
//     engine's names (gpu_cache_usage_perc, time_per_output_token_seconds,
//     time_in_queue_requests, the cpu/swap gauges, the lifetime gpu_prefix_cache_hit_rate and
//     spec decode gauges, beside the spec decode token counters) and no engine label, as vLLM
//     0.6 to 0.7 printed them, with the per-phase request histograms (queue, prefill, decode,
//     inference) that V0 printed too. V0's gauges are ratios since the server started, as
//     vLLM computed them (CacheMetricData, the rejection sampler's running totals).
//   - Spans follow current vLLM's (package vllm's span vocabulary), plus gen_ai.response.model,
//     which current vLLM omits: Scenario.SpanModelAttribute (default on) controls it.
//   - Aborted requests count in request_success_total{finished_reason="abort"} and e2e, and have
//     no span, as in vLLM, where aborts are not traced.
//   - Each diagnosis rule has a scenario named by its id (FaultRules), whose fault strikes
//     FaultyInstance. Ground truth lists, per fault, the intervals where its mechanism held;
//     healthy, low_traffic and restart have none. spec_pays_at_low_batch (SpecByBatch) is a
//     speculating instance under a light and then a heavy load beside peers that do not
//     speculate; Result.DecodingOf measures its batch and time per token from the spans.
//     prefix_miss_under_preemption strikes with two faults at once (kv_cache_saturated's and
//     prefix_cache_miss's) and has the truth of both.
//   - Preemption by recompute keeps the request's computed blocks cached (evictable, evicted
//     from its chain's tail) until other requests need them; when it is admitted again its
//     prompt and output so far are looked up once more and hit what is left. The prefix-cache
//     counters count those recompute lookups, as vLLM did until about 0.11 (later releases
//     count them apart and export only first-time lookups); Result.Lookups keeps the two apart,
//     per instance and scrape interval, as the ground truth of the hit rate.
//
// Simplifications a real vLLM would show differently: no _created series (single-process vLLM
// prints them; the Go client does not); V0 runs emit spans with the current attribute set; a
// per-request prefix is modelled as never cached rather than cached and never hit (the same hit
// rate).
package sim
