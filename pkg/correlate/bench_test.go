package correlate

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// benchSignals are ten signals per key: the seven joined, the request rate, and two the join
// does not read.
var benchSignals = append(series.JoinSignals(), series.TTFTP99, series.ITLP99)

// benchInput is an hour of traffic on 8 instances (with an hour of lookback on the grid, as
// diagnosis needs), n requests of about 0.1 to 25 s, and three findings per instance.
func benchInput(n int) Input {
	const instances = 8
	rng := rand.New(rand.NewPCG(1, 2))
	from := t0.Add(time.Hour)
	to := from.Add(time.Hour)
	g := series.NewGrid(t0, to.Add(2*time.Minute), step)
	set := series.NewSet(g)
	var findings []diagnosis.Finding
	keys := make([]series.Key, instances)
	for k := range keys {
		keys[k] = series.Key{Instance: "10.0.0." + strconv.Itoa(k) + ":8000", Model: "model-" + strconv.Itoa(k%3)}
		for _, sig := range benchSignals {
			s := series.NewSeries(sig, keys[k], g.Len)
			for i := range s.Values {
				s.Values[i] = rng.Float64()
			}
			set.Put(s)
		}
		for f := range 3 {
			start := from.Add(time.Duration(f*20) * time.Minute)
			findings = append(findings, diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: keys[k], Start: start, End: start.Add(7 * time.Minute)})
		}
	}
	reqs := make([]traces.Request, n)
	for i := range reqs {
		k := keys[rng.IntN(instances)]
		start := from.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		prompt, output := 50+rng.IntN(4000), 2+rng.IntN(1000)
		ttft := 0.05 + 0.0001*float64(prompt) + 0.02*rng.NormFloat64()
		decode := float64(output-1) * 0.02 * (1 + 0.2*rng.NormFloat64())
		queue := 0.05 * rng.ExpFloat64()
		e2e := ttft + decode + 0.01
		r := request(k, start, start.Add(time.Duration(e2e*float64(time.Second))))
		r.TraceID = fmt.Sprintf("%032x", i+1)
		r.PromptTokens, r.OutputTokens = int64(prompt), int64(output)
		r.TTFT, r.Queue, r.Prefill, r.Decode, r.E2E = ttft, queue, ttft-queue, decode, e2e
		if i%2 == 0 {
			r.Model = "" // V1 spans: the model comes from the metrics
		}
		reqs[i] = r
	}
	return Input{Requests: reqs, Set: set, Findings: findings, From: from, To: to}
}

// BenchmarkJoin measures the join, the window statistics and the anomaly flags.
func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		in := benchInput(n)
		b.Run(strconv.Itoa(n)+"_requests", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res := Join(in, Options{})
				if len(res.Rows) != n {
					b.Fatalf("%d rows, want %d", len(res.Rows), n)
				}
			}
		})
	}
}
