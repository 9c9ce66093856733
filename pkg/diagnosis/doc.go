// Package diagnosis is the symptom-to-cause matrix of DESIGN §4 as data (one Rule value per row)
// and its evaluation over aligned series (pkg/series). It is pure: no I/O, no HTTP, no Grafana.
//
// # API
//
//	signals, err := diagnosis.RequiredSignals(ruleIDs)      // what to fetch (empty ids = all rules)
//	lookback, err := diagnosis.Lookback(opts)               // how far before the range the grid must start
//	evalStep, err := diagnosis.EvalStep(opts, step, scrape, span) // the step the rules need (≤ panel step)
//	th, err := diagnosis.ParseThresholds(rawJSON)           // settings overrides, validated (or a
//	                                                        // Thresholds field in the settings struct)
//	res, err := diagnosis.Evaluate(set, diagnosis.Options{
//	    Rules: ids, Thresholds: th, MinRequests: 20, Baseline: time.Hour, EvalFrom: from})
//	entries, err := diagnosis.Catalog(th)                   // the `GET rules` resource, thresholds in force
//	sel := diagnosis.Selection{HeadlineOnly: h, Severities: sevs}
//	err = sel.Validate(); kept := sel.Keep(res.Findings)    // the `findings` format's selection
//
// pkg/plan calls RequiredSignals, Lookback and EvalStep to plan a diagnosis query's fetch.
//
// Result holds Findings (the `findings` format and annotations), Timelines (the `timeline`
// format: every rule's State per step and key), Alerts (the `alert` format: 1 while a condition
// holds, else 0, per rule, key and severity) and Notices (insufficient data, not applicable),
// all over Result.Grid, the steps from EvalFrom on, or Options.Report: a panel's coarser grid,
// each point showing the most severe state of the evaluated steps it stands for (findings keep
// the evaluation's resolution). pkg/frames turns them into data frames.
//
// # Evaluation
//
// At each step a rule's condition is true, false or unknown. Conditions combine their
// comparisons with Kleene logic: one certainly false comparison makes the condition false even
// if another has no data. Like a Prometheus alerting rule, a true step makes the rule pending;
// once true for `for` it fires; a false step resolves it. An unknown step neither fires nor
// clears: the timeline shows it as insufficient_data (or not_applicable); the run goes on if the
// condition holds again within `for`, and a longer gap ends it.
//
// A finding is one run that fired. Its Start is the step where the condition first held in that
// run (Prometheus' activeAt: the finding includes its pending part), its End the last step where
// the condition held; FiringAt is when it had held for `for`. Findings that ended before EvalFrom
// are dropped; earlier grid steps only feed baselines and pending states (see Lookback).
//
// Rules of DESIGN §4, as implemented:
//
//   - Quantiles are intervals. Quantile series carry the histogram bucket (Lower, Upper] that
//     holds each value, and a condition on quantiles holds only when the bounds make it certain.
//     The quantile q lies in (Lower, Upper], so q > x is certain when Lower ≥ x, and q < x when
//     Upper < x: p99/p50 > 2 is Lower(p99)/Upper(p50) ≥ 2 (p99 > Lower(p99), p50 ≤ Upper(p50));
//     "grown 2× over the baseline" is Lower(now) ≥ 2 × Upper(baseline); "above 0.5 s" is
//     Lower ≥ 0.5, so a p50 in vLLM's (0.5, 0.75] bucket is above 0.5 s. A condition the bounds
//     cannot make certain does not hold (it is false, not unknown), so a healthy server whose
//     interpolated ratio exceeds 2 inside coarse buckets stays ok. A quantile series without
//     bounds (trace-derived) is taken as exact.
//   - Enough data. Quantile rules need RequestCount ≥ MinRequests at the step, else the step is
//     insufficient_data.
//   - Baselines are the median of the signal over the Baseline window before the step (for
//     quantiles, the median of the bucket upper bounds, over steps with enough requests); fewer
//     than half the window's steps usable gives insufficient_data. While a run is in progress
//     (pending or firing, unknown steps included), its later steps are judged against the
//     baseline of its first step, the hour before the incident began: DESIGN's "the hour before
//     the evaluated point" read as an alert reads it, since otherwise a fault longer than half
//     the window becomes its own baseline and the finding ends while the fault goes on. A false
//     step ends the run, and the next run has the baseline of its own start. Findings show the
//     baselines they were judged against.
//   - preemptions_free_cache compares the preemption rate with KV usage averaged over the same
//     rate window (signal kv_usage_avg), not with the gauge at the step. vLLM preempts only when
//     a step finds no free block, so at that instant the cache is full; DESIGN §4's "preemptions
//     while the cache is not full" (--max-num-seqs too high for the KV cache) is a window with
//     short, frequent exhaustion spikes while the cache is mostly free. kv_cache_saturated keeps
//     the instantaneous gauge (> 0.85) with many preemptions (> 0.5/s): a cache that stays full.
//     The two can hold together only if a window averages below 0.9 yet ends above 0.85 with
//     more than 30 preemptions a minute; both then name the same remedy (lower --max-num-seqs),
//     and the headline order puts kv_cache_saturated first.
//   - A rule whose required signal has no series for a key is not_applicable for that key, with
//     the reason from Set.Absent (speculative decoding off, a vLLM without the histogram).
//     prefix_cache_miss applies only where vllm:cache_config_info says prefix caching is on.
//   - Short shared prefix: vLLM caches whole KV blocks. When prefix_cache_miss fires and its hit
//     rate never rose above near_zero_hit_rate while prompts averaged more than one block
//     (CacheConfig.BlockSize), no request reused even its first block: the shared prefix is
//     shorter than one block or differs within it; the metrics cannot tell these apart, and the
//     finding (Variant shared_prefix_shorter_than_block) names both. Prompts shorter than one
//     block are reported as Variant prompts_shorter_than_block. Without the block size or the
//     prompt length, no variant is claimed.
//   - decode_bound's "TPOT p99" is the p99 of each request's mean time per output token
//     (vllm:request_time_per_output_token_seconds). vLLM V0 had no such histogram: its
//     time_per_output_token_seconds is the inter-token latency under its old name (TELEMETRY §3),
//     one observation per gap, whose p99 is the slowest steps' (a step carrying a long prefill
//     chunk stalls every decoding request once) rather than the slowest requests'. Without the
//     per-request histogram the rule compares the mean time per output token (total decode time
//     over tokens, the window's TPOT) with its baseline, by the same factor.
//   - V0's prefix-cache hit rate is a ratio since the server started; pkg/signals derives the
//     rate window's hit rate from it and the prompt token counter (an approximation), so a miss
//     shows within a window as it does on current vLLM.
//   - Counter resets: rates come from Prometheus, which handles resets; the NaN step after a
//     restart is unknown, a zero rate is false, and a short burst cannot last `for`.
//   - Specific causes outrank symptoms: a prefill_bound, decode_bound or token_budget_starved
//     finding (and the rows linked below) that overlaps (in time, on the same instance) a finding of a cause that produces it
//     (see explainedBy) becomes secondary: severity info, SecondaryTo the cause's id (followed
//     to the root when that cause is itself secondary, so that it names a primary finding). The
//     alert series are not affected. Three links go beyond DESIGN §4's list, each where one
//     mechanism produces both rows: prefill_blocking and prefill_bound are secondary to
//     token_budget_starved, past_the_knee to kv_cache_saturated; explainedBy's comments give
//     each link's reason.
//   - token_budget_starved does not hold while prompts are 1.5× (its baseline_factor) longer
//     than over the baseline: prompts that grew explain a slower prefill under any budget, and
//     that is prefill_bound's "longer prompts" (seed 000: long prompts should have a
//     proportional TTFT, a starved budget slows prefills of the same prompts).
//   - One headline per instance, its likely bottleneck: primary before secondary findings, then
//     this rule order: kv_cache_saturated, preemptions_free_cache, past_the_knee,
//     queue_with_free_cache, prefix_cache_miss, spec_decode_inefficient, prefill_blocking,
//     token_budget_starved, prefill_bound, decode_bound, client_timeouts; then the longer
//     finding, then the earlier.
//   - Evidence: every evidence signal and baseline at the finding's start, peak (the step where
//     the condition held by the largest relative margin past its tightest threshold) and end,
//     with quantile buckets; the thresholds in force; the request count per window.
//   - Confidence: four criteria, each met or not: margin (≥ 10% past the tightest threshold at
//     the peak), duration (lasted ≥ 2× `for`), data (no unknown step inside the finding and, for
//     quantile rules, at least 5× MinRequests in every window), corroboration (a related cause or
//     symptom finding overlaps on the same instance). high: 3 or 4 met; medium: 2; low: 0 or 1.
//
// # Recommendations
//
// A finding of seven rules carries a Recommendation: the flag, the value to set, its effect and
// the arithmetic in one line, from that instance's series averaged over the finding's window
// (pure functions KVFit, SpecDraft, BatchedTokens, InstancesNeeded, PrefixReuse; the values
// below are their defaults). Where a number cannot be had, Value is NaN and Missing names the
// absent metric or vLLM version; the finding keeps its Action.
//
//   - kv_cache_saturated, preemptions_free_cache (KVFit): a running request holds KV usage ÷
//     running of the pool (the instantaneous gauge for the first, the window mean kv_usage_avg
//     for the second), shown in tokens of the pool num_gpu_blocks × block_size
//     (vllm:cache_config_info, the newest of the range) beside prompt + output ÷ 2 from the
//     length means, which stand in, over the pool, when running is unknown;
//     --max-num-seqs = ⌊(1 − KVHeadroom) ÷ share⌋ with KVHeadroom 10%. With cache_dtype auto,
//     the fp8 alternative: twice the pool, and the sequences it fits.
//   - spec_decode_inefficient (SpecDraft): α (accepted over draft tokens) and k (draft tokens
//     per draft, signal spec_draft_length); vLLM accepts drafts in order until the first
//     rejection, so α·k = p + p² + … + p^k gives the per-position acceptance p; the speedup
//     estimate (1 + Σ_{i≤k'} p^i) / (1 + DraftOverhead·k'), overhead 0.05 of a target step per
//     draft token, is evaluated for k' = 0…k: keep k, shorten to the best k', or disable (0).
//   - queue_with_free_cache, token_budget_starved (BatchedTokens): --max-num-batched-tokens =
//     ⌈running⌉ decodes + n × p95 prompt length (signal prompt_length_p95, interpolated in its
//     1-2-5 bucket, which the arithmetic shows), n = ⌈request rate ÷ engine steps per second⌉,
//     at least 1. When running sits at its window maximum for half the window or more (the
//     --max-num-seqs ceiling), also --max-num-seqs = ⌊0.9 × running ÷ KV usage⌋, what the cache fits.
//   - past_the_knee (InstancesNeeded): arrivals = finished requests per second plus the
//     queue's growth per second, both from the finding's start to the queue's peak; the rate one
//     instance held is the highest request rate of any step of the range where waiting was
//     below 10% of running; instances to add = ⌈arrivals ÷ held⌉ − 1.
//   - prefix_cache_miss (PrefixReuse): the hit rate to expect is the baseline (median over
//     the hour before the finding) when it reached the rule's hit_rate, else the median over
//     the window of healthy peers (same model, other instances, hit rate ≥ hit_rate); the
//     misses cost (expected − now) × mean prompt tokens per request, priced at the mean prefill
//     time over the tokens computed now; fewer cached tokens per request than one block means
//     the shared prefix is shorter than a KV block.
//
// Severities: each rule has one; spec_decode_inefficient escalates to critical while the
// acceptance rate is below critical_below, and then has one alert series per severity.
//
// Thresholds: every rule has named parameters (Rule.Params) with defaults, units and kinds, and
// a `for` parameter in seconds; the data source's jsonData.thresholds overrides them
// (rule id → parameter → number). Fractions must lie in [0, 1], ratios be > 0, rates and
// durations ≥ 0.
package diagnosis
