package traces

import (
	"testing"
)

// BenchmarkDecodeLargeTrace decodes a trace of 10,000 spans in Jaeger's hex-id OTLP JSON: the
// cost of the id rewrite and protojson per trace at the span bound.
func BenchmarkDecodeLargeTrace(b *testing.B) {
	body := []byte(hugeTrace(9999, false))
	o := Options{}.withDefaults()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		td, err := decodeTracesData(body)
		if err != nil {
			b.Fatal(err)
		}
		var st walkStats
		if reqs := o.requests(td, &st); len(reqs) != 1 {
			b.Fatalf("got %d requests", len(reqs))
		}
	}
}
