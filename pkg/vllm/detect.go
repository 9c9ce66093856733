package vllm

import "strings"

// Generation is the metric vocabulary a Prometheus holds for vLLM.
type Generation string

// The generations: V0 is the old engine's vocabulary (gpu_cache_usage_perc, swapped requests,
// V0 gauges); V1 is the current one (kv_cache_usage_perc, prefix-cache token counters,
// inter_token_latency_seconds). A fleet can mix both: Detection keeps every name present.
const (
	GenerationNone Generation = "none"
	GenerationV0   Generation = "v0"
	GenerationV1   Generation = "v1"
	GenerationMix  Generation = "mixed"
)

// v1Markers exist only in V1 engines; v0Markers only in the V0 engine. The per-phase request
// histograms (queue, prefill, decode, inference) are no marker: the V0 engine printed them too
// from about 0.6 on (vLLM's docs/design/v1/metrics.md lists them among the V0 metrics).
var (
	v1Markers = []string{KVCacheUsage, PrefixCacheQueries, GPUPrefixCacheQueries, InterTokenLatency + "_count"}
	v0Markers = []string{RequestsSwapped, CPUCacheUsage, TimeInQueueRequests + "_count", GPUPrefixCacheHitRate, SpecAcceptanceRateV0}
)

// Detection is what a Prometheus holds of vLLM's vocabulary.
type Detection struct {
	Generation Generation
	names      map[string]bool
}

// Detect classifies the metric names that a Prometheus holds (the values of __name__ matching
// vllm:.*). Histograms appear as their _bucket, _sum and _count series.
func Detect(names []string) Detection {
	d := Detection{Generation: GenerationNone, names: make(map[string]bool, len(names))}
	for _, n := range names {
		if strings.HasPrefix(n, "vllm:") {
			d.names[n] = true
		}
	}
	if len(d.names) == 0 {
		return d
	}
	v1, v0 := d.hasAny(v1Markers), d.hasAny(v0Markers)
	switch {
	case v1 && v0:
		d.Generation = GenerationMix
	case v0 || !v1:
		d.Generation = GenerationV0
	default:
		d.Generation = GenerationV1
	}
	return d
}

func (d Detection) hasAny(names []string) bool {
	for _, n := range names {
		if d.names[n] {
			return true
		}
	}
	return false
}

// Has reports whether a metric family has series: a histogram family counts when its
// _count series exists.
func (d Detection) Has(family string) bool {
	return d.names[family] || d.names[family+"_count"] || d.names[family+"_bucket"]
}

// Names returns how many vLLM series names were seen.
func (d Detection) Names() int { return len(d.names) }
