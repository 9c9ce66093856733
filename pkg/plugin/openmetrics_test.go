package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// scrape is the sample interval of the generated data, and the data source's scrapeInterval.
const scrape = 15 * time.Second

// fleet describes a synthetic Prometheus history of vLLM servers: every instance serves one
// model, every series has one sample per scrape over span, ending at end.
type fleet struct {
	generation vllm.Generation // V0 writes the old engine's names (vLLM 0.5), V1 the current ones
	end        time.Time
	span       time.Duration
	instances  []server
}

// server is one vLLM process. Gauges vary with the scrape index so that values can be compared
// point by point; counters and histograms grow by the same amount each scrape, so rates and
// quantiles are steady once the rate window is full.
type server struct {
	instance, model string
	running         float64 // plus 0 to 4, by scrape index
	kvUsage         float64 // plus 0.001 per scrape
	// ttft are the time-to-first-token observations of each scrape interval, in seconds.
	ttft []observation
	// itl are the inter-token latency observations of each scrape interval.
	itl []observation
}

// observation is count requests that took seconds, in every scrape interval, or in every
// every-th one when every > 1: bursts make the rate window's length matter.
type observation struct {
	seconds float64
	count   int
	every   int
}

// upTo is how many of these observations the first i scrape intervals hold.
func (o observation) upTo(i int) float64 {
	if o.every > 1 {
		return float64(o.count * (i / o.every))
	}
	return float64(o.count * i)
}

// family is one metric family of the exposition and its samples per scrape.
type family struct {
	name, typ string
	// series returns the samples of the i-th scrape: label set (without instance and job) →
	// value, for gauges and counters; histograms use buckets instead.
	series func(s server, i int) map[string]float64
	// buckets and obs make a histogram family: cumulative counts of obs(s) per scrape.
	buckets []float64
	obs     func(s server) []observation
}

func (f fleet) families() []family {
	v0 := f.generation == vllm.GenerationV0
	kvName := vllm.KVCacheUsage
	itlName := vllm.InterTokenLatency
	if v0 {
		kvName, itlName = vllm.GPUCacheUsage, vllm.TimePerOutputToken
	}
	gauge := func(name string, v func(s server, i int) float64) family {
		return family{name: name, typ: "gauge", series: func(s server, i int) map[string]float64 { return map[string]float64{"": v(s, i)} }}
	}
	counter := func(name string, perScrape float64) family {
		return family{name: name, typ: "counter", series: func(_ server, i int) map[string]float64 { return map[string]float64{"": perScrape * float64(i)} }}
	}
	fams := []family{
		gauge(vllm.RequestsRunning, func(s server, i int) float64 { return s.running + float64(i%5) }),
		gauge(vllm.RequestsWaiting, func(_ server, i int) float64 { return float64(i % 3) }),
		gauge(kvName, func(s server, i int) float64 { return s.kvUsage + 0.001*float64(i) }),
		counter(vllm.Preemptions, 0.25),
		counter(vllm.PromptTokens, 1000),
		counter(vllm.GenerationTokens, 500),
		{name: vllm.RequestSuccess, typ: "counter", series: func(_ server, i int) map[string]float64 {
			out := map[string]float64{}
			for _, r := range vllm.FinishedReasons {
				out[`finished_reason="`+r+`"`] = 0
			}
			out[`finished_reason="stop"`] = 9 * float64(i)
			out[`finished_reason="abort"`] = float64(i)
			return out
		}},
		{name: vllm.TimeToFirstToken, typ: "histogram", buckets: vllm.TTFTBuckets, obs: func(s server) []observation { return s.ttft }},
		{name: itlName, typ: "histogram", buckets: vllm.TokenLatencyBuckets, obs: func(s server) []observation { return s.itl }},
		{name: vllm.E2ELatency, typ: "histogram", buckets: vllm.RequestLatencyBuckets, obs: func(server) []observation { return []observation{{seconds: 4, count: 10}} }},
	}
	if v0 {
		return append(fams,
			gauge(vllm.RequestsSwapped, func(server, int) float64 { return 0 }),
			gauge(vllm.CPUCacheUsage, func(server, int) float64 { return 0 }))
	}
	return append(fams,
		counter(vllm.PrefixCacheQueries, 1000),
		counter(vllm.PrefixCacheHits, 600),
		family{name: vllm.QueueTime, typ: "histogram", buckets: vllm.RequestLatencyBuckets, obs: func(server) []observation { return []observation{{seconds: 0.4, count: 10}} }},
		family{name: vllm.PrefillTime, typ: "histogram", buckets: vllm.RequestLatencyBuckets, obs: func(server) []observation { return []observation{{seconds: 0.2, count: 10}} }})
}

// write renders the fleet as an OpenMetrics file (timestamps in seconds) for promtool's
// backfill, and returns its path.
func (f fleet) write(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	n := int(f.span / scrape)
	for _, fam := range f.families() {
		typeName := strings.TrimSuffix(fam.name, "_total")
		fmt.Fprintf(&b, "# TYPE %s %s\n", typeName, fam.typ)
		for _, s := range f.instances {
			base := fmt.Sprintf(`instance=%q,job="vllm",model_name=%q`, s.instance, s.model)
			if f.generation != vllm.GenerationV0 {
				base += `,engine="0"`
			}
			for i := 0; i <= n; i++ {
				ts := strconv.FormatInt(f.end.Add(-time.Duration(n-i)*scrape).Unix(), 10)
				if fam.typ == "histogram" {
					writeHistogram(&b, fam, s, base, i, ts)
					continue
				}
				samples := fam.series(s, i)
				extras := make([]string, 0, len(samples))
				for k := range samples {
					extras = append(extras, k)
				}
				sort.Strings(extras)
				for _, extra := range extras {
					labels := base
					if extra != "" {
						labels += "," + extra
					}
					fmt.Fprintf(&b, "%s{%s} %s %s\n", fam.name, labels, num(samples[extra]), ts)
				}
			}
		}
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), string(f.generation)+".om.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeHistogram writes the i-th scrape of a histogram: i intervals' worth of observations.
func writeHistogram(b *strings.Builder, fam family, s server, base string, i int, ts string) {
	obs := fam.obs(s)
	var total, sum float64
	for _, o := range obs {
		total += o.upTo(i)
		sum += o.seconds * o.upTo(i)
	}
	for _, le := range fam.buckets {
		var c float64
		for _, o := range obs {
			if o.seconds <= le {
				c += o.upTo(i)
			}
		}
		fmt.Fprintf(b, "%s_bucket{%s,le=%q} %s %s\n", fam.name, base, num(le), num(c), ts)
	}
	fmt.Fprintf(b, "%s_bucket{%s,le=\"+Inf\"} %s %s\n", fam.name, base, num(total), ts)
	fmt.Fprintf(b, "%s_count{%s} %s %s\n", fam.name, base, num(total), ts)
	fmt.Fprintf(b, "%s_sum{%s} %s %s\n", fam.name, base, num(sum), ts)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// writeNonVLLM writes an OpenMetrics file of a node exporter's series only: a Prometheus that
// scrapes something, but no vLLM.
func writeNonVLLM(t testing.TB, end time.Time) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TYPE node_cpu_seconds counter\n")
	for i := 0; i <= 20; i++ {
		fmt.Fprintf(&b, "node_cpu_seconds_total{instance=\"10.0.9.9:9100\",job=\"node\",cpu=\"0\",mode=\"idle\"} %d %d\n", 15*i, end.Add(-time.Duration(20-i)*scrape).Unix())
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(t.TempDir(), "node.om.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
