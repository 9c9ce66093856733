// Package correlate joins vLLM requests (one span each, pkg/traces) with the aligned metric
// series (pkg/series) and the diagnosis findings (pkg/diagnosis) of their time and instance,
// flags the requests that stand out in their window, and explains one request. It is pure: no
// I/O, no HTTP, no Grafana: the handlers in pkg/plugin fetch, this package only computes.
//
// # The join
//
// Metrics and traces meet only by time, instance and model (vLLM emits no exemplars). For each
// request and each joined signal (series.Joined):
//
//   - AtStart is the signal's last grid sample at or before the request's start (an as-of
//     join); MetricsAt is that sample's time.
//   - Worst is the worst value while the request ran: over the sample in force at its start and
//     every sample up to its end; the highest for KV usage, running, waiting, waiting share and
//     preemption rate, the lowest for the prefix-cache hit rate and the draft acceptance rate.
//   - Findings are those of the request's instance (and model, when both are known) whose
//     [Start, End] overlaps the request's [Start, End].
//
// The grid is regular, so each request's as-of sample is index arithmetic, O(1), and requests
// need no sorting; each request looks its instance up once, and its instance's findings, sorted
// by start, are scanned up to the first that starts after it ends. The cost is O(R·F_i + S +
// the grid steps the requests span), S being the samples of the joined series and F_i the
// findings of one instance (a handful): two passes over the requests (build the rows, then flag
// them against the window), no query per request and no allocation but a flagged one's reasons.
//
// Requests without a model (vLLM's current spans carry none) take their instance's model from
// the metrics when the instance serves exactly one; with several, the model stays empty, the
// metric state cannot be joined (it is per model), findings match on the instance alone, and a
// notice says so.
//
// # Anomalies
//
// A request is anomalous for each of these reasons, computed over the requests of the window
// (at least Options.MinRequests of them carrying the values involved, else the reason is not
// tested and a notice says so):
//
//   - ttft_above_p99: its TTFT is above the window's p99 (nearest rank), which with fewer than
//     100 requests is the slowest one, so nothing is flagged;
//   - queue_over_half: it waited in the queue more than half its end-to-end time, and at least
//     Options.MinQueue;
//   - ttft_vs_prompt: its TTFT is out of proportion to its prompt: the window's least-squares
//     fit TTFT ≈ a + b·prompt_tokens leaves a residual above Options.ResidualFactor times the
//     residuals' robust scale (1.4826 × their median absolute deviation, at least 1 ms);
//   - slow_decode: its decode time per output token (decode / (output tokens − 1), the tokens
//     after the first) is above Options.DecodeFactor times the window's median.
//
// and, from the metrics rather than the window's spans, for one more:
//
//   - ttft_above_typical: its TTFT is at least Options.StandoutFactor times its instance's
//     typical TTFT over the whole range (TypicalTTFT: the median of the metrics' TTFT p50).
//     Row.Standout is that ratio, and Rank orders rows by it: the spans a search returns are
//     sampled and, at fleet scale, picked by a threshold (Thresholds), so statistics of the
//     window's spans alone cannot say which requests stand out over the range.
//
// # Coverage
//
// The window's finished requests come from the metrics: request_rate (every finish reason,
// aborts included, which vLLM does not trace) integrated over the window. Sampled or
// tail-sampled traces cover few of them, and percentiles taken from spans are then biased.
//
// # A requests answer
//
// Requests answers a requests query from its join: Input.WithMetrics first sets the metric side
// from the query's diagnosis (or says why there is none), then Requests joins the requests the
// searches returned, keeps the rows of the query's Selection (its model filter, applied once
// the join has given a model to the spans that carry none; AnomalousOnly), ranks them (Rank)
// and keeps the Limit that stand out most. Its notices are the coverage, with the TTFT the
// searches asked for and the instances whose share of requests examined differs from the
// whole's by more than a factor of two, then the caller's (the metrics, the plan, the
// searches), the join's, and the limit's.
//
// # Explanation
//
// Explain attributes a request's end-to-end time to queue, prefill, decode and other (e2e minus
// the three; the engine stages run on another clock than e2e, so a negative remainder is set to
// 0, noted, and the shares are then of the stages' sum), names the dominant stage and the
// stage its first anomaly points at (queue or prefill, the larger, for a slow first token;
// queue; decode), picks the active finding whose mechanism lengthens that stage (else the
// instance's headline finding), and writes one sentence a user can act on. When the request
// stands out and no active finding explains that stage, or the finding is prefill_bound or
// decode_bound (a symptom without a specific cause), Explanation.Profile gives the third tier
// of the method (metrics, traces, then a profile): the steps to profile that instance with a
// few requests shaped like this one.
package correlate
