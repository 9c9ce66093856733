package diagnosis

import (
	"math"
	"testing"
)

// FuzzParseThresholds: any thresholds JSON parses or fails with an error, never a panic, and
// a parsed one holds no NaN.
func FuzzParseThresholds(f *testing.F) {
	f.Add([]byte(`{"kv_cache_saturated":{"kv_usage":0.9}}`))
	f.Add([]byte(`{"no_such_rule":{"x":1},"prefill_blocking":{"ratio":"2"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		th, err := ParseThresholds(raw)
		if err != nil {
			return
		}
		for rule, params := range th {
			for k, v := range params {
				if math.IsNaN(v) {
					t.Errorf("%s.%s is NaN", rule, k)
				}
			}
		}
	})
}
