// Package diagnosis is the symptom-to-cause matrix as data (README, The diagnosis matrix) and its
// evaluation over aligned series (pkg/series). It is pure: no I/O, no HTTP, no Grafana.
//
// # API
//
//	signals, err := diagnosis.RequiredSignals(ruleIDs)      // what to fetch (empty ids = all rules)
//	lookback, err := diagnosis.Lookback(opts)               // how far before the range the grid must start
//	evalStep, err := diagnosis.EvalStep(opts, step, scrape, span) // the step the rules need (≤ panel step)
//	th, err := diagnosis.ParseThresholds(rawJSON)           // the settings' overrides, validated
//	res, err := diagnosis.Evaluate(set, diagnosis.Options{
//	    Rules: ids, Thresholds: th, MinRequests: 20, Baseline: time.Hour, EvalFrom: from})
//	entries, err := diagnosis.Catalog(th)                   // the `GET rules` resource, thresholds in force
//	sel := diagnosis.Selection{HeadlineOnly: h, Severities: sevs}
//	err = sel.Validate(); kept := sel.Keep(res.Findings)    // the `findings` format's selection
//	rank := diagnosis.HeadlineRank(ruleID)                  // the headline's order of rules, lowest first
//
// Result holds Findings (the `findings` format and annotations), Timelines (the `timeline`
// format: every rule's State per step and key), Alerts (the `alert` format: 1 while a condition
// holds, else 0, per rule, key and severity) and Notices (insufficient data, not applicable),
// all over Result.Grid, the steps from EvalFrom on, or Options.Report: a panel's coarser grid,
// each point showing the most severe state of the evaluated steps it stands for (findings keep
// the evaluation's resolution).
//
// # A rule is one value
//
// Each rule is a Rule value in the file of its family (rules_*.go), listed once in matrix
// (matrix.go): its texts, parameters and condition, and what relates it to the others: the
// rules it explains or that explain it, its headline rank, the request stages it lengthens,
// and its recommendation (or why it has none). TestEveryRuleIsComplete fails on a rule that
// lacks any of them. README's layout lists what else a new rule touches.
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
// # Interpretations
//
//   - Quantiles are intervals. vLLM's buckets are coarse (TTFT jumps 0.25 → 0.5 → 0.75 → 1 s),
//     so an interpolated quantile can double a ratio by itself: a healthy server with TTFT near
//     0.2 s shows an interpolated p99/p50 above 2. Quantile series carry the histogram bucket
//     (Lower, Upper] that holds each value, and a condition on quantiles holds only when the
//     bounds make it certain: q > x when Lower ≥ x, q < x when Upper < x; p99/p50 > 2 is
//     Lower(p99)/Upper(p50) ≥ 2; "grown 2× over the baseline" is Lower(now) ≥ 2 × Upper(baseline);
//     "above 0.5 s" is Lower ≥ 0.5, so a p50 in vLLM's (0.5, 0.75] bucket is above 0.5 s. A
//     condition the bounds cannot make certain is false, not unknown. A quantile series without
//     bounds (trace-derived) is taken as exact.
//   - Enough data. Quantile rules need RequestCount ≥ MinRequests at the step, else the step is
//     insufficient_data.
//   - Baselines are the median of the signal over the Baseline window before the step (for
//     quantiles, the median of the bucket upper bounds, over steps with enough requests); fewer
//     than half the window's steps usable gives insufficient_data. While a run is in progress
//     (pending or firing, unknown steps included), its later steps are judged against the
//     baseline of its first step, the hour before the incident began, as an alert reads "the
//     hour before": otherwise a fault longer than half the window becomes its own baseline and
//     the finding ends while the fault goes on. A false step ends the run, and the next run has
//     the baseline of its own start. Findings show the baselines they were judged against.
//   - preemptions_free_cache compares the preemption rate with KV usage averaged over the same
//     rate window (signal kv_usage_avg), not with the gauge at the step. vLLM preempts only when
//     a step finds no free block, so at that instant the cache is full; "preemptions while the
//     cache is not full" (--max-num-seqs too high for the KV cache) is a window with short,
//     frequent exhaustion spikes while the cache is mostly free. kv_cache_saturated keeps the
//     instantaneous gauge (> 0.85) with many preemptions (> 0.5/s): a cache that stays full.
//     The two can hold together only if a window averages below 0.9 yet ends above 0.85 with
//     more than 30 preemptions a minute; both then name the same remedy (lower --max-num-seqs),
//     and kv_cache_saturated ranks first for the headline.
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
//   - Recomputes are not prefix reuse. A request preempted by recompute is admitted again later
//     and its prompt (and output so far) looked up in the prefix cache once more; that lookup
//     mostly hits the request's own blocks, freed but still cached. vLLM counted those lookups
//     in vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total until about 0.11, so
//     under many preemptions the hit rate looked healthy while new prompts shared nothing.
//     prefix_cache_miss therefore judges the hit rate of first-time lookups: the recompute
//     lookups are R = preemption rate × mean prompt tokens, at most the lookups beyond the prompt
//     tokens processed (prefix_cache_query_tps − prompt_tps: nothing where vLLM leaves recomputes
//     out of the counters, as later releases do), of which recompute_hit_share hit; the estimate
//     is (hits − share·R) / (queries − R), clamped to [0, 1]. Without the lookups' counter (V0),
//     queries are the prompt tokens processed plus R. The finding states both rates and R
//     (Evidence.Derived), and its recommendation and short-prefix reading use the same estimate.
//     R undercounts a little (a recompute looks up the output so far too) and the share is a
//     default: the hits a recompute finds depend on how much of its blocks other requests
//     evicted meanwhile.
//   - decode_bound's "TPOT p99" is the p99 of each request's mean time per output token
//     (vllm:request_time_per_output_token_seconds). vLLM V0 had no such histogram: its
//     time_per_output_token_seconds is the inter-token latency under its old name, one
//     observation per gap, whose p99 is the slowest steps' (a step carrying a long prefill
//     chunk stalls every decoding request once) rather than the slowest requests'. Without the
//     per-request histogram the rule compares the mean time per output token (total decode time
//     over tokens, the window's TPOT) with its baseline, by the same factor.
//   - V0's prefix-cache hit rate is a ratio since the server started; pkg/signals derives the
//     rate window's hit rate from it and the prompt token counter (an approximation), so a miss
//     shows within a window as it does on current vLLM.
//   - engine_stalled is an instance whose series keep arriving, with requests running or waiting,
//     and no engine step (the _count of vllm:iteration_tokens_total) and no generated token over
//     the whole rate window: a wedged engine keeps its API server answering /health and its
//     /metrics scraped, so a stall shows as flat counters beside live gauges, not as missing
//     data. An idle instance (nothing running or waiting) is not stalled; a scrape gap or the
//     window after a restart (a rate needs two samples) is unknown, never a finding. Without the
//     step counter, no generated token alone decides. A wedge that also zeroes the running and
//     waiting gauges cannot be told from an idle instance by the metrics: vLLM exports no counter
//     of received requests. The queue and the clients' aborts a stall produces are secondary to it.
//   - The queue's reasons: since about 0.20 vLLM splits the waiting queue into requests waiting for
//     capacity and requests deferred by a transient constraint (LoRA slots, an asynchronous KV
//     transfer, a blocked request). Where it does, queue_with_free_cache and past_the_knee count
//     only the capacity waits, and queue_deferred the deferred ones, whose remedy is not a token
//     budget; where it does not, queue_deferred is not applicable and the same queue is
//     queue_with_free_cache's.
//   - outputs_truncated is the share of finished requests whose finished_reason is length (they hit
//     max_tokens or the context limit) above length_ratio and at least baseline_factor times its
//     baseline: a workload whose answers always ran into their limit is the clients' choice, a
//     rise is news. A window with no finished request has no share (unknown). Its evidence sets
//     the output lengths (mean, p95) against the requests' mean max_tokens where vLLM exports
//     vllm:request_params_max_tokens.
//   - Counter resets: rates come from Prometheus, which handles resets; the NaN step after a
//     restart is unknown, a zero rate is false, and a short burst cannot last `for`.
//   - Specific causes outrank symptoms: a finding that overlaps (in time, on the same instance) a
//     finding of a rule that explains it (Rule's explains and explainedBy, each link with its
//     reason) becomes secondary: severity info, SecondaryTo the cause's id (followed to the root
//     when that cause is itself secondary, so that it names a primary finding). The alert series
//     are not affected.
//   - token_budget_starved does not hold while prompts are 1.5× (its baseline_factor) longer
//     than over the baseline: a longer prompt takes proportionally longer to prefill under any
//     budget (prefill_bound's "longer prompts"), while a starved budget slows the prefills of the
//     same prompts.
//   - One headline per instance, its likely bottleneck: primary before secondary findings, then
//     the rules' headline ranks (matrix.go says how they are chosen), then the longer finding,
//     then the earlier.
//   - Evidence: every evidence signal and baseline at the finding's start, peak (the step where
//     the condition held by the largest relative margin past its tightest threshold) and end,
//     with quantile buckets; the thresholds in force; the request count per window.
//   - Confidence: four criteria, each met or not: margin (≥ 10% past the tightest threshold at
//     the peak), duration (lasted ≥ 2× `for`), data (no unknown step inside the finding and, for
//     quantile rules, at least 5× MinRequests in every window), corroboration (a related cause or
//     symptom finding overlaps on the same instance). high: 3 or 4 met; medium: 2; low: 0 or 1.
//   - Recommendations: a finding of a rule with a recommender carries the flag, the value to set,
//     its effect and the arithmetic in one line, from that instance's series averaged over the
//     finding's window and its vllm:cache_config_info (the newest of the range); each pure
//     function (KVFit, SpecDraft, BatchedTokens, InstancesNeeded, PrefixReuse) documents its
//     arithmetic. It states the flag's current value as far as the metrics show it and where
//     from (runningCeiling, stepBudget, draft tokens per draft, the hit rate now), and the change
//     goes the action's way from it (settle): raise above it, lower below it, or a target when it
//     is unknown or holds the value; a value that would not change the flag is no value, and
//     Instead says why the finding fired and what to look at. Where a number cannot be had,
//     Value is NaN and Missing names the absent metric or vLLM version; the finding keeps its
//     Action.
//
// Severities: each rule has one; spec_decode_inefficient escalates to critical while the
// acceptance rate is below critical_below, and then has one alert series per severity.
//
// Thresholds: every rule has named parameters (Rule.Params) with defaults, units and kinds, and
// a `for` parameter in seconds; the data source's jsonData.thresholds overrides them
// (rule id → parameter → number). Fractions must lie in [0, 1], ratios be > 0, rates and
// durations ≥ 0.
package diagnosis
