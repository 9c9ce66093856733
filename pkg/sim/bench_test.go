package sim

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkHourOfFourInstances simulates one hour of four instances at 20 requests a second
// each (288k requests), scraped every 15 s, keeping one span in 100.
func BenchmarkHourOfFourInstances(b *testing.B) {
	sc, _ := Lookup("healthy")
	in := sc.Instances[0]
	in.Load.RatePerSecond = 20
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
		b.ReportMetric(float64(len(res.Spans)), "spans")
	}
}
