package traces_test

import (
	"testing"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/internal/tracetest"
)

// BenchmarkDecodeLargeTrace decodes a trace of 10,000 spans in Jaeger's hex-id OTLP JSON: the
// cost of the id rewrite and protojson per trace at the span bound.
func BenchmarkDecodeLargeTrace(b *testing.B) {
	body := []byte(tracetest.HugeTrace(9999, false))
	o := traces.Options{}.WithDefaults()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		td, err := traces.DecodeTracesData(body)
		if err != nil {
			b.Fatal(err)
		}
		var st traces.WalkStats
		if reqs := o.Requests(td, &st); len(reqs) != 1 {
			b.Fatalf("got %d requests", len(reqs))
		}
	}
}
