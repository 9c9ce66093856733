package e2e_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// testThinnedBucketsInterpolateHigh checks that the bucket_layouts scenario tests what it says:
// on its healthy instance with thinned buckets, histogram_quantile's interpolated TTFT p99/p50 is
// far above 2 for most of the run (so only the instance's own bounds keep the diagnosis from a
// false prefill_blocking, which the precision test would count).
func testThinnedBucketsInterpolateHigh(t *testing.T, b *bed) {
	for _, gen := range []vllm.Generation{vllm.GenerationV1, vllm.GenerationV0} {
		run := b.runs[jobOf("bucket_layouts", gen)]
		t.Run(string(gen), func(t *testing.T) {
			require.Empty(t, truthOn(run, "127.0.0.1:8000"), "the thinned instance is healthy")
			tp, pc := pluginFor(t, b.prom.URL, map[string]any{"labelMatchers": fmt.Sprintf(`{job=%q}`, run.job)})
			resp := ask(t, tp, pc, query("A", map[string]any{"queryType": "signals", "signals": []string{"ttft_ratio"}, "instance": "127.0.0.1:8000"},
				runStart, runStart.Add(runFor), scrape))
			r := resp.Responses["A"]
			require.NoError(t, r.Error)
			var ratios []float64
			for _, f := range r.Frames {
				if len(f.Fields) != 2 {
					continue
				}
				for i := 0; i < f.Rows(); i++ {
					if v, ok := f.Fields[1].ConcreteAt(i); ok {
						ratios = append(ratios, v.(float64))
					}
				}
			}
			require.NotEmpty(t, ratios)
			sort.Float64s(ratios)
			assert.Greater(t, ratios[len(ratios)/2], 4.0, "median interpolated p99/p50 of the thinned instance")
		})
	}
}

func truthOn(run *scenarioRun, instance string) []string {
	var out []string
	for _, tr := range run.truth {
		if tr.Instance == instance {
			out = append(out, tr.Rule)
		}
	}
	return out
}
