package vllm

import "strconv"

// CacheConfig is what vllm:cache_config_info's labels say of one engine's KV cache.
type CacheConfig struct {
	PrefixCaching      bool
	PrefixCachingKnown bool
	BlockSize          int
	CacheDType         string
	NumGPUBlocks       int
}

// ParseCacheConfig reads the labels of one vllm:cache_config_info series. vLLM prints
// Python values ("True", "None", "16"), so unknown or "None" fields stay zero.
func ParseCacheConfig(labels map[string]string) CacheConfig {
	c := CacheConfig{CacheDType: labels["cache_dtype"]}
	switch labels["enable_prefix_caching"] {
	case "True", "true":
		c.PrefixCaching, c.PrefixCachingKnown = true, true
	case "False", "false":
		c.PrefixCachingKnown = true
	}
	c.BlockSize = atoi(labels["block_size"])
	c.NumGPUBlocks = atoi(labels["num_gpu_blocks"])
	return c
}

func atoi(s string) int {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return int(f)
}

// FP8 reports whether the KV cache is stored in an 8-bit float type.
func (c CacheConfig) FP8() bool {
	switch c.CacheDType {
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla":
		return true
	}
	return false
}
