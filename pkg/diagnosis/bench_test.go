package diagnosis

import (
	"fmt"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
)

// BenchmarkEvaluate is a dashboard's worst ordinary case: 10 instances, every rule, 6 hours at
// 15 s plus the hour of baseline before (1680 steps per signal).
func BenchmarkEvaluate(b *testing.B) {
	const n = 1680
	set := newSet(n)
	for i := range 10 {
		k := series.Key{Instance: fmt.Sprintf("10.0.0.%d:8000", i), Model: "llama"}
		for sig, s := range healthy() {
			fill(set, k, sig, 0, n, s)
		}
		cacheOn(set, k)
		fill(set, k, series.KVUsage, 600, 900, x(0.97))
		fill(set, k, series.PreemptionRate, 600, 900, x(2))
		fill(set, k, series.TTFTP99, 1000, 1300, qb(3, 2.5, 5))
	}
	opts := Options{EvalFrom: stepAt(240)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Evaluate(set, opts); err != nil {
			b.Fatal(err)
		}
	}
}
