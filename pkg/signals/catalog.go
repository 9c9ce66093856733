// Package signals turns named, version-independent vLLM signals into PromQL for the metric
// names a Prometheus actually holds, runs the range queries in parallel (each distinct query
// once), and aligns the results into a series.Set.
//
// The steps are apart: NewPlan writes what a Request will fetch without I/O (the expressions
// for the detected vocabulary, the ranges and steps, split past Prometheus's 11,000 points and
// coarse over a lookback, and the instant lookups); Run executes any number of plans in one
// bounded fan-out and then aligns their answers, with no I/O after the fan-out. Fetch is
// Detect, NewPlan and Run for one request.
//
// Every rate-like signal covers the rate window (Window), in every generation. Where vLLM V0
// exported only a ratio since the server started (vllm:gpu_prefix_cache_hit_rate), the window's
// value is derived from it and approximate (see windowedLifetimeRatio and the signal's
// description). A V0 server without the spec-decode token counters has only its lifetime
// acceptance gauge (vllm:spec_decode_draft_acceptance_rate), used as the acceptance rate's
// fallback. Quantile signals are computed here from each series' own bucket rates (quantile.go).
//
// The PromQL is written through the Prometheus parser's types: matchers are labels.Matchers
// (the settings' labelMatchers as the parser read them, the instance and model filters as
// regex matchers), selectors the AST's VectorSelector and MatrixSelector printed by their
// String(), and windows model.Durations; the functions around them are fixed text. Prometheus's
// failures are marked with the SDK's backend.DownstreamError, a query it rejects as bad_data
// with backend.PluginError.
package signals

import (
	"fmt"
	"sort"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Def describes one signal: how it is shown, and how it is computed from each generation's
// metric names.
type Def struct {
	Name        series.Signal `json:"name"`
	Label       string        `json:"label"`
	Unit        string        `json:"unit"`
	Group       string        `json:"group"`
	Description string        `json:"description"`
	// LowerIsWorse marks a signal whose low values are the bad ones (a hit or acceptance
	// rate), so that the worst instances by it are the lowest.
	LowerIsWorse bool `json:"lowerIsWorse,omitempty"`
	// alts are the ways to compute it, newest metric names first; every one whose metrics
	// exist is used, joined with "or", so a fleet that mixes vLLM versions is covered.
	alts []alt
	// q is the quantile of a quantile signal (0 otherwise): its alts fetch the bucket rates
	// of a histogram family, shared by every quantile of that family, and the quantile and its
	// bucket interval are computed from the counts (see histogram.quantile).
	q float64
	// derive computes a signal from others on our side instead of in PromQL.
	derive *derivation
}

// alt is one way to compute a signal: the metric families it needs and its PromQL.
type alt struct {
	needs []string
	expr  func(b builder) string
}

type derivation struct {
	num, den series.Signal
}

// Groups, in the order editors show them.
const (
	groupLatency    = "Latency"
	groupStages     = "Request stages"
	groupCache      = "KV and prefix cache"
	groupScheduler  = "Scheduler"
	groupSpec       = "Speculative decoding"
	groupThroughput = "Throughput"
)

func quantile(name series.Signal, label string, q float64, group, desc string, families ...string) Def {
	d := Def{Name: name, Label: label, Unit: "s", Group: group, Description: desc, q: q}
	for _, f := range families {
		d.alts = append(d.alts, alt{needs: []string{f}, expr: func(b builder) string { return bucketRates(b, f) }})
	}
	return d
}

// bucketRates is the PromQL of a histogram family's bucket rates per instance, model and le.
func bucketRates(b builder, family string) string {
	return fmt.Sprintf("sum by (%s, le) (rate(%s))", b.by(), b.over(family+"_bucket"))
}

func mean(name series.Signal, label, unit, group, desc string, families ...string) Def {
	d := Def{Name: name, Label: label, Unit: unit, Group: group, Description: desc}
	for _, f := range families {
		d.alts = append(d.alts, alt{needs: []string{f}, expr: func(b builder) string {
			return fmt.Sprintf("%s / %s", b.sumRate(f+"_sum"), b.sumRate(f+"_count"))
		}})
	}
	return d
}

func counterRatio(name series.Signal, label, group, desc string, pairs ...[2]string) Def {
	d := Def{Name: name, Label: label, Unit: "percentunit", Group: group, Description: desc}
	for _, p := range pairs {
		d.alts = append(d.alts, alt{needs: p[:], expr: func(b builder) string {
			return fmt.Sprintf("%s / %s", b.sumRate(p[0]), b.sumRate(p[1]))
		}})
	}
	return d
}

func gauge(agg string, metric string) alt {
	return alt{needs: []string{metric}, expr: func(b builder) string {
		return fmt.Sprintf("%s by (%s) (%s)", agg, b.by(), b.sel(metric))
	}}
}

// gaugeAvg is a gauge averaged over the rate window, the busiest engine's.
func gaugeAvg(metric string) alt {
	return alt{needs: []string{metric}, expr: func(b builder) string {
		return fmt.Sprintf("max by (%s) (avg_over_time(%s))", b.by(), b.over(metric))
	}}
}

// windowedLifetimeRatio approximates a ratio over the rate window from a gauge that holds the
// ratio since the server started (vLLM V0's CacheMetricData) and a counter of its denominator.
// With r the lifetime ratio and P the counter, the hits so far are about r·P, so the window's
// ratio is (r·P − (r·P) offset w) / (P − P offset w). It is approximate: V0 counted lookups in
// KV blocks and weighted its running ratio by blocks of 1000 lookups, while P counts prompt
// tokens. A window whose counter did not grow (idle, or reset by a restart) has no value, nor
// one where vLLM reports -1 (no lookup yet, or prefix caching off); rounding is clamped to [0, 1].
func windowedLifetimeRatio(ratio, counter string) alt {
	return alt{needs: []string{ratio, counter}, expr: func(b builder) string {
		r := fmt.Sprintf("(max by (%s) (%s) >= 0)", b.by(), b.sel(ratio))
		rOff := fmt.Sprintf("(max by (%s) (%s) >= 0)", b.by(), b.offset(ratio))
		p := fmt.Sprintf("sum by (%s) (%s)", b.by(), b.sel(counter))
		pOff := fmt.Sprintf("sum by (%s) (%s)", b.by(), b.offset(counter))
		return fmt.Sprintf("clamp((%s * %s - %s * %s) / (%s - %s > 0), 0, 1)", r, p, rOff, pOff, p, pOff)
	}}
}

// lifetimeGauge is a V0 gauge that holds a ratio since the server started, averaged over the
// rate window; NaN (no draft yet) has no value.
func lifetimeGauge(metric string) alt {
	return alt{needs: []string{metric}, expr: func(b builder) string {
		return fmt.Sprintf("avg by (%s) (avg_over_time(%s) >= 0)", b.by(), b.over(metric))
	}}
}

func rateOf(metric string, extra ...*labels.Matcher) alt {
	return alt{needs: []string{metric}, expr: func(b builder) string { return b.sumRate(metric, extra...) }}
}

// Catalog lists every signal, in the order editors show them.
var Catalog = []Def{
	quantile(series.TTFTP50, "TTFT p50", 0.5, groupLatency, "Median time to first token: arrival to first token, queue and prefill included.", vllm.TimeToFirstToken),
	quantile(series.TTFTP90, "TTFT p90", 0.9, groupLatency, "90th percentile time to first token.", vllm.TimeToFirstToken),
	quantile(series.TTFTP99, "TTFT p99", 0.99, groupLatency, "99th percentile time to first token.", vllm.TimeToFirstToken),
	{Name: series.TTFTRatio, Label: "TTFT p99/p50", Unit: "none", Group: groupLatency,
		Description: "TTFT p99 over p50: far above 2 means long prefills block other requests. Computed from the two quantiles, with their bucket intervals.",
		derive:      &derivation{num: series.TTFTP99, den: series.TTFTP50}},
	quantile(series.ITLP50, "Inter-token latency p50", 0.5, groupLatency, "Median time between consecutive outputs of a request.", vllm.InterTokenLatency, vllm.TimePerOutputToken),
	quantile(series.ITLP99, "Inter-token latency p99", 0.99, groupLatency, "99th percentile time between consecutive outputs.", vllm.InterTokenLatency, vllm.TimePerOutputToken),
	// vllm:time_per_output_token_seconds is the old name of the inter-token latency histogram
	// (package vllm): one observation per gap, not per request, so its quantiles are ITL's, and
	// per-request TPOT quantiles exist only where vLLM has the per-request histogram.
	quantile(series.TPOTP50, "Time per output token p50", 0.5, groupLatency, "Median of each request's mean decode time per output token (vLLM with the per-request histogram only).", vllm.RequestTimePerToken),
	quantile(series.TPOTP99, "Time per output token p99", 0.99, groupLatency, "99th percentile of each request's mean decode time per output token (vLLM with the per-request histogram only).", vllm.RequestTimePerToken),
	mean(series.TPOTMean, "Time per output token (mean)", "s", groupLatency,
		"Mean decode time per output token: over requests where vLLM has the per-request histogram, else over all inter-token gaps (weighted by tokens).",
		vllm.RequestTimePerToken, vllm.TimePerOutputToken),
	quantile(series.E2EP50, "End-to-end p50", 0.5, groupLatency, "Median request latency, arrival to finish.", vllm.E2ELatency),
	quantile(series.E2EP99, "End-to-end p99", 0.99, groupLatency, "99th percentile request latency.", vllm.E2ELatency),
	mean(series.QueueTimeMean, "Queue time (mean)", "s", groupStages, "Mean time from first queued to first scheduled.", vllm.QueueTime, vllm.TimeInQueueRequests),
	mean(series.PrefillTimeMean, "Prefill time (mean)", "s", groupStages, "Mean time from first scheduled to first token (preemptions included).", vllm.PrefillTime),
	mean(series.DecodeTimeMean, "Decode time (mean)", "s", groupStages, "Mean time from first token to last token (preemptions included).", vllm.DecodeTime),
	{Name: series.PrefixCacheHitRate, Label: "Prefix cache hit rate", Unit: "percentunit", Group: groupCache, LowerIsWorse: true,
		Description: "Prompt tokens found in the prefix cache over tokens looked up, over the rate window. " +
			"vLLM V0 exported only a hit rate since the server started (vllm:gpu_prefix_cache_hit_rate); there the window's rate is " +
			"approximated from that ratio weighted by the prompt tokens processed, and a window with a counter reset has no value.",
		alts: append(counterRatio("", "", "", "",
			[2]string{vllm.PrefixCacheHits, vllm.PrefixCacheQueries},
			[2]string{vllm.GPUPrefixCacheHits, vllm.GPUPrefixCacheQueries}).alts, windowedLifetimeRatio(vllm.GPUPrefixCacheHitRate, vllm.PromptTokens))},
	{Name: series.PrefixCacheQueryTPS, Label: "Prefix cache lookups", Unit: "short", Group: groupCache,
		Description: "Tokens looked up in the prefix cache per second (the hit rate's denominator). vLLM V0 has no such counter.",
		alts:        []alt{rateOf(vllm.PrefixCacheQueries), rateOf(vllm.GPUPrefixCacheQueries)}},
	{Name: series.KVUsage, Label: "KV cache usage", Unit: "percentunit", Group: groupCache,
		Description: "Fraction of KV-cache blocks in use; the busiest data-parallel engine counts.",
		alts:        []alt{gauge("max", vllm.KVCacheUsage), gauge("max", vllm.GPUCacheUsage)}},
	{Name: series.KVUsageAvg, Label: "KV cache usage (window mean)", Unit: "percentunit", Group: groupCache,
		Description: "Fraction of KV-cache blocks in use, averaged over the rate window (the busiest data-parallel engine counts): " +
			"the cache's load over the span a preemption rate covers, where the gauge shows only the scrape's instant.",
		alts: []alt{gaugeAvg(vllm.KVCacheUsage), gaugeAvg(vllm.GPUCacheUsage)}},
	{Name: series.PreemptionRate, Label: "Preemptions", Unit: "ops", Group: groupCache,
		Description: "Preemptions per second: requests evicted from the KV cache and recomputed later.",
		alts:        []alt{rateOf(vllm.Preemptions)}},
	{Name: series.Running, Label: "Running", Unit: "short", Group: groupScheduler, Description: "Requests in the running batch.", alts: []alt{gauge("sum", vllm.RequestsRunning)}},
	{Name: series.Waiting, Label: "Waiting", Unit: "short", Group: groupScheduler, Description: "Requests in the waiting queue.", alts: []alt{gauge("sum", vllm.RequestsWaiting)}},
	{Name: series.WaitingRatio, Label: "Waiting share", Unit: "percentunit", Group: groupScheduler,
		Description: "waiting / (running + waiting).",
		alts: []alt{{needs: []string{vllm.RequestsWaiting, vllm.RequestsRunning}, expr: func(b builder) string {
			w, r := fmt.Sprintf("sum by (%s) (%s)", b.by(), b.sel(vllm.RequestsWaiting)), fmt.Sprintf("sum by (%s) (%s)", b.by(), b.sel(vllm.RequestsRunning))
			return fmt.Sprintf("%s / (%s + %s)", w, r, w)
		}}}},
	{Name: series.WaitingCapacity, Label: "Waiting for capacity", Unit: "short", Group: groupScheduler,
		Description: "Waiting requests that found no room to be scheduled (vLLM 0.20+); the rest are deferred.",
		alts: []alt{{needs: []string{vllm.RequestsWaitingByReason}, expr: func(b builder) string {
			return fmt.Sprintf("sum by (%s) (%s)", b.by(), b.sel(vllm.RequestsWaitingByReason, is(vllm.LabelReason, "capacity")))
		}}}},
	{Name: series.WaitingDeferred, Label: "Waiting, deferred", Unit: "short", Group: groupScheduler,
		Description: "Waiting requests held back by a transient constraint: the LoRA budget (--max-loras), an asynchronous KV transfer, a blocked request (vLLM 0.20+).",
		alts: []alt{{needs: []string{vllm.RequestsWaitingByReason}, expr: func(b builder) string {
			return fmt.Sprintf("sum by (%s) (%s)", b.by(), b.sel(vllm.RequestsWaitingByReason, is(vllm.LabelReason, "deferred")))
		}}}},
	{Name: series.SpecAcceptanceRate, Label: "Draft acceptance rate", Unit: "percentunit", Group: groupSpec, LowerIsWorse: true,
		Description: "Accepted draft tokens over proposed draft tokens (only with speculative decoding on). " +
			"A vLLM V0 server without the token counters has only its gauge vllm:spec_decode_draft_acceptance_rate, " +
			"a ratio since the server started, averaged over the rate window: a change shows slowly there.",
		alts: append(counterRatio("", "", "", "", [2]string{vllm.SpecAcceptedTokens, vllm.SpecDraftTokens}).alts,
			lifetimeGauge(vllm.SpecAcceptanceRateV0))},
	{Name: series.SpecAcceptanceLength, Label: "Mean acceptance length", Unit: "none", Group: groupSpec, LowerIsWorse: true,
		Description: "1 + accepted tokens per draft: tokens gained per speculative step.",
		alts: []alt{{needs: []string{vllm.SpecAcceptedTokens, vllm.SpecDrafts}, expr: func(b builder) string {
			return fmt.Sprintf("1 + %s / %s", b.sumRate(vllm.SpecAcceptedTokens), b.sumRate(vllm.SpecDrafts))
		}}}},
	{Name: series.RequestRate, Label: "Finished requests", Unit: "reqps", Group: groupThroughput,
		Description: "Finished requests per second, whatever the reason.", alts: []alt{rateOf(vllm.RequestSuccess)}},
	{Name: series.AbortRatio, Label: "Aborted share", Unit: "percentunit", Group: groupThroughput,
		Description: "Aborted requests (client gone, timeout) over all finished requests.",
		alts: []alt{{needs: []string{vllm.RequestSuccess}, expr: func(b builder) string {
			return fmt.Sprintf("(%s or %s) / %s", b.sumRate(vllm.RequestSuccess, is(vllm.LabelFinishedReason, "abort")),
				fmt.Sprintf("0 * %s", b.sumRate(vllm.RequestSuccess)), b.sumRate(vllm.RequestSuccess))
		}}}},
	{Name: series.ErrorRatio, Label: "Errored share", Unit: "percentunit", Group: groupThroughput,
		Description: "Requests that ended in an error (finished_reason error) over all finished requests.",
		alts: []alt{{needs: []string{vllm.RequestSuccess}, expr: func(b builder) string {
			return fmt.Sprintf("(%s or %s) / %s", b.sumRate(vllm.RequestSuccess, is(vllm.LabelFinishedReason, "error")),
				fmt.Sprintf("0 * %s", b.sumRate(vllm.RequestSuccess)), b.sumRate(vllm.RequestSuccess))
		}}}},
	{Name: series.LengthRatio, Label: "Truncated share", Unit: "percentunit", Group: groupThroughput,
		Description: "Requests that stopped at max_tokens or the context limit (finished_reason length) over all finished requests: outputs cut short.",
		alts: []alt{{needs: []string{vllm.RequestSuccess}, expr: func(b builder) string {
			return fmt.Sprintf("(%s or %s) / %s", b.sumRate(vllm.RequestSuccess, is(vllm.LabelFinishedReason, "length")),
				fmt.Sprintf("0 * %s", b.sumRate(vllm.RequestSuccess)), b.sumRate(vllm.RequestSuccess))
		}}}},
	{Name: series.PromptTPS, Label: "Prompt tokens/s", Unit: "short", Group: groupThroughput, Description: "Prefill tokens processed per second.", alts: []alt{rateOf(vllm.PromptTokens)}},
	{Name: series.GenerationTPS, Label: "Generated tokens/s", Unit: "short", Group: groupThroughput, Description: "Output tokens per second.", alts: []alt{rateOf(vllm.GenerationTokens)}},
	{Name: series.RequestCount, Label: "Requests in window", Unit: "short", Group: groupThroughput,
		Description: "Requests that got a first token within the rate window: how much data each quantile rests on.",
		alts: []alt{{needs: []string{vllm.TimeToFirstToken}, expr: func(b builder) string {
			return fmt.Sprintf("sum by (%s) (increase(%s))", b.by(), b.over(vllm.TimeToFirstToken+"_count"))
		}}}},
	mean(series.PromptLengthMean, "Prompt length (mean)", "short", groupThroughput, "Mean prompt tokens per request.", vllm.RequestPromptTokens),
	mean(series.OutputLengthMean, "Output length (mean)", "short", groupThroughput, "Mean output tokens per request.", vllm.RequestGenerationTokens),
	// The three below feed the diagnosis's recommendations (the value to set).
	tokenQuantile(series.PromptLengthP95, "Prompt length p95", 0.95, "95th percentile of prompt tokens per request (1-2-5 buckets: coarse).", vllm.RequestPromptTokens),
	tokenQuantile(series.OutputLengthP95, "Output length p95", 0.95, "95th percentile of output tokens per request (1-2-5 buckets: coarse).", vllm.RequestGenerationTokens),
	mean(series.MaxTokensMean, "max_tokens (mean)", "short", groupThroughput, "Mean max_tokens parameter of the finished requests (vLLM 0.10+).", vllm.RequestParamsMaxTokens),
	{Name: series.SpecDraftLength, Label: "Draft length", Unit: "none", Group: groupSpec,
		Description: "Draft tokens proposed per draft: the number of speculative tokens in use (only with speculative decoding on).",
		alts: []alt{{needs: []string{vllm.SpecDraftTokens, vllm.SpecDrafts}, expr: func(b builder) string {
			return fmt.Sprintf("%s / %s", b.sumRate(vllm.SpecDraftTokens), b.sumRate(vllm.SpecDrafts))
		}}}},
	{Name: series.EngineStepRate, Label: "Engine steps/s", Unit: "short", Group: groupThroughput,
		Description: "Engine steps per second (observations of vllm:iteration_tokens_total).", alts: []alt{{needs: []string{vllm.IterationTokens}, expr: func(b builder) string { return b.sumRate(vllm.IterationTokens + "_count") }}}},
}

// tokenQuantile is a quantile of a token-count histogram: as quantile, counted in tokens.
func tokenQuantile(name series.Signal, label string, q float64, desc string, family string) Def {
	d := quantile(name, label, q, groupThroughput, desc, family)
	d.Unit = "short"
	return d
}

var byName = func() map[series.Signal]*Def {
	m := make(map[series.Signal]*Def, len(Catalog))
	for i := range Catalog {
		m[Catalog[i].Name] = &Catalog[i]
	}
	return m
}()

// Lookup returns a signal's definition.
func Lookup(name series.Signal) (*Def, bool) {
	d, ok := byName[name]
	return d, ok
}

// Names returns every signal name, sorted.
func Names() []string {
	out := make([]string, 0, len(Catalog))
	for _, d := range Catalog {
		out = append(out, string(d.Name))
	}
	sort.Strings(out)
	return out
}

// needs lists every metric family the signal could use, for notices.
func (d *Def) needs() []string {
	var out []string
	for _, a := range d.alts {
		out = append(out, a.needs...)
	}
	return out
}
