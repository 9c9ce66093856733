package sim

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkHourOfFourInstances simulates one hour of four instances at 20 requests a second
// each (288k requests), scraped every 15 s, keeping one span in 100; it reports the
// requests finished.
func BenchmarkHourOfFourInstances(b *testing.B) {
	sc, _ := Lookup("healthy")
	in := sc.Instances[0]
	// Short exchanges, so that one engine keeps up with 20 requests a second.
	in.Load.RatePerSecond = 20
	in.Load.SuffixTokens.Mean, in.Load.OutputTokens.Mean = 200, 60
	in.Engine.NumGPUBlocks, in.Engine.MaxNumSeqs = 32000, 1024
	sc.Instances = nil
	for i := range 4 {
		x := in
		x.Address = fmt.Sprintf("127.0.0.1:%d", 8000+i)
		sc.Instances = append(sc.Instances, x)
	}
	for b.Loop() {
		res, err := Run(sc, t0, time.Hour, 15*time.Second, WithSpanSampling(100))
		if err != nil {
			b.Fatal(err)
		}
		var done float64
		for _, x := range sc.Instances {
			done += res.view(x.Address).increase("vllm:request_success_total", t0, t0.Add(time.Hour))
		}
		b.ReportMetric(done, "requests")
	}
}
