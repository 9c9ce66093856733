package vllm

import "testing"

func TestDetectClassifiesTheVocabulary(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  Generation
	}{
		{"no vLLM series", []string{"up", "process_cpu_seconds_total"}, GenerationNone},
		{"V0 engine: swapped requests and the GPU cache gauge", []string{RequestsSwapped, GPUCacheUsage, RequestsRunning}, GenerationV0},
		{"vLLM names without markers are read as V0", []string{RequestsRunning, RequestsWaiting}, GenerationV0},
		{"current: kv_cache_usage_perc", []string{KVCacheUsage, RequestsRunning}, GenerationV1},
		{"V1 0.8–0.11: gpu prefix cache counters", []string{GPUPrefixCacheQueries, GPUCacheUsage}, GenerationV1},
		{"a fleet of both", []string{KVCacheUsage, RequestsSwapped}, GenerationMix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detect(tt.names).Generation; got != tt.want {
				t.Errorf("Detect(%v) = %s, want %s", tt.names, got, tt.want)
			}
		})
	}
}

func TestHasFindsHistogramsByTheirSeries(t *testing.T) {
	d := Detect([]string{TimeToFirstToken + "_bucket", TimeToFirstToken + "_count", Preemptions})
	for name, want := range map[string]bool{TimeToFirstToken: true, Preemptions: true, QueueTime: false} {
		if got := d.Has(name); got != want {
			t.Errorf("Has(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestParseCacheConfigReadsPythonValues(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   CacheConfig
		fp8    bool
	}{
		{"prefix caching on, fp8", map[string]string{"enable_prefix_caching": "True", "block_size": "16", "cache_dtype": "fp8", "num_gpu_blocks": "8000"},
			CacheConfig{PrefixCaching: true, PrefixCachingKnown: true, BlockSize: 16, CacheDType: "fp8", NumGPUBlocks: 8000}, true},
		{"off, auto dtype", map[string]string{"enable_prefix_caching": "False", "block_size": "16", "cache_dtype": "auto", "num_gpu_blocks": "2452"},
			CacheConfig{PrefixCachingKnown: true, BlockSize: 16, CacheDType: "auto", NumGPUBlocks: 2452}, false},
		{"unknown values stay zero", map[string]string{"num_gpu_blocks": "None"}, CacheConfig{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseCacheConfig(tt.labels)
			if got != tt.want || got.FP8() != tt.fp8 {
				t.Errorf("ParseCacheConfig(%v) = %+v (fp8 %v), want %+v (fp8 %v)", tt.labels, got, got.FP8(), tt.want, tt.fp8)
			}
		})
	}
}

func TestAvailabilityNamesTheReleases(t *testing.T) {
	for name, want := range map[string]string{
		InterTokenLatency:  "exported by vLLM 0.11 and later",
		GPUCacheUsage:      "exported by vLLM 0.5 to 0.11",
		"vllm:not_a_thing": "not a vLLM metric this plugin knows",
	} {
		if got := Availability(name); got != want {
			t.Errorf("Availability(%s) = %q, want %q", name, got, want)
		}
	}
}
