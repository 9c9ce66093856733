package sim

import (
	"bytes"
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

// BenchmarkWriteOpenMetrics writes two hours of a 14-instance fleet, scraped every 15 s, as
// the OpenMetrics text promtool backfills; it reports the samples (lines) written.
func BenchmarkWriteOpenMetrics(b *testing.B) {
	sc, err := Fleet(14)
	if err != nil {
		b.Fatal(err)
	}
	res, err := Run(sc, t0, 2*time.Hour, 15*time.Second, WithoutSpans())
	if err != nil {
		b.Fatal(err)
	}
	var c lineCounter
	for b.Loop() {
		c = 0
		if err := res.WriteOpenMetrics(&c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c), "samples")
}

// lineCounter counts the lines written to it and keeps none.
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
