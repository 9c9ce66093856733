// Package verdict answers "did each optimisation really do what it should?": it
// compares a baseline window with the current one, per vLLM instance and model, for chunked
// prefill, prefix caching, speculative decoding, an FP8 KV cache and the concurrency limit.
// It is pure: it reads series.Sets that the signals package fetched and does no I/O. It owns
// the verdict's texts: the rows' reasons and the notices of the two fetches, each naming the
// window it concerns (Notices).
//
// # Windows
//
// Each window is summarised from a range query whose rate window equals its step, so that the
// points tile the window: the point at t covers (t-step, t]. Only the tiles that lie wholly
// inside the window count (Summarise), so up to one step is lost at each end; the rows say
// which span was evaluated. Over those tiles:
//   - counter rates (request rate, preemptions) are the plain mean: the total increase over
//     the covered time;
//   - request count is the sum of each tile's increase;
//   - means per request (prompt and output length, time per output token) are weighted by
//     each tile's request count; the prefix-cache hit rate by prompt tokens per second (tokens
//     looked up) and the draft acceptance rate by generated tokens per second;
//   - gauges (KV usage, running, waiting) are the mean of their samples, running also its max;
//   - quantiles stay intervals: the window's quantile lies between the lowest lower bucket
//     bound and the highest upper bucket bound of its tiles (each tile holds at least the
//     quantile's share of its requests below its own upper bound, so the union does too). The
//     point value shown is the request-weighted mean of the tiles' interpolated values, an
//     estimate only: no verdict rests on it.
//
// # Stated bounds (Params, DefaultParams)
//
//   - enough data: at least 20 requests in each window, else "not enough data";
//   - like for like: request rate, mean prompt length and mean output length may differ by
//     at most 25% of the baseline's value, else "not comparable": a change of traffic is not
//     credited to an optimisation;
//   - a quantile is "down" only when the current window's upper bucket bound is at or below
//     the baseline's lower bound, "up" in the mirror case; otherwise the change is within
//     bucket resolution and the reason says so;
//   - a mean is "down" when it fell by at least 10%;
//   - prefix caching: hit rate above 0.5; speculative decoding: acceptance above 0.7,
//     counterproductive below 0.6; FP8 KV cache: KV usage per running request at most 0.65 of
//     the baseline's ("about halved") at the same concurrency (mean running within the load
//     tolerance, else "not comparable") and, when both windows state it, at least 1.5 times the
//     KV blocks, the pool shown in tokens (num_gpu_blocks × block_size); concurrency: mean running at least 0.8 of its observed ceiling and mean
//     waiting under 10% of mean running.
//
// # Which optimisation is in use
//
// The data decides where it can: vllm:cache_config_info's enable_prefix_caching and
// cache_dtype, and the presence of speculative-decoding series. The query's declared list
// stands in where the data cannot tell: chunked prefill never shows in vLLM's metrics, and
// older servers lack cache_config_info. Concurrency (max_num_seqs) is always in use. An
// optimisation that was already fully in effect in the baseline (FP8 in both windows,
// a hit rate or an acceptance already above its bound) makes the windows "not comparable":
// there is no before to compare with.
//
// # A rule's promise
//
// Each diagnosis rule names the signal its action moves and which way (series.Promise).
// CheckPromise compares that signal over a window before the change (the finding's) with one
// after it: moved when it changed at least MeanChange (10%) the promised way, got worse at least
// that much the other way, did not move otherwise; a signal absent from either window is not
// enough data. A quantile, or TTFT p99/p50, also needs MinRequests requests in each window, and
// moves (or worsens) only when its windows' bucket intervals separate as well, the bound the
// optimisations' quantiles follow. A share (hit rate, acceptance, the shares waiting, aborted
// or truncated) must also move by ShareChange (0.01) in absolute terms. The like-for-like gate does not apply: a finding's window is
// often one of changed traffic, and the promise is about that instance whatever its load.
package verdict
