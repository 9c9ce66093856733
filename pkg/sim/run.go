package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Job is the Prometheus job label of the simulated scrapes.
const Job = "vllm"

// Span is one finished request as vLLM traces it: one llm_request span (package vllm's span
// vocabulary).
type Span struct {
	Instance, Model  string
	RequestID        string
	TraceID          [16]byte
	SpanID           [8]byte
	Start, End       time.Time
	TTFT, E2E        float64 // seconds
	Queue, Prefill   float64
	Decode           float64
	Inference        float64
	PromptTokens     int
	CompletionTokens int
	Temperature      float64
	TopP             float64
	MaxTokens        int
	FinishReason     string
	// Fault is the rule of the fault injected on the instance when the request arrived, or of
	// the fault that delayed the request it queued behind (a backlog outlives its fault);
	// empty otherwise. Ground truth for the requests a fault made slow; never exported.
	Fault string
}

// Finding is one ground-truth fact: the diagnosis should report Rule on Instance from Start
// to End.
type Finding struct {
	Rule     string    `json:"rule"`
	Instance string    `json:"instance"`
	Model    string    `json:"model"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
}

// Result is a finished simulation: the scrapes as Prometheus would have stored them, the
// request spans, and the ground truth.
type Result struct {
	Scenario Scenario
	Start    time.Time
	Duration time.Duration
	Scrape   time.Duration
	Truth    []Finding
	// Spans are the finished requests' spans, in start order (all of them unless an Option
	// sampled or dropped them).
	Spans []Span
	// ProcessIDs are the simulated vllm.process_id of each instance, by address.
	ProcessIDs map[string]int
	// Lookups are each instance's prefix-cache lookups per scrape interval (the k-th from
	// Start + k × Scrape), by address: the ground truth of its hit rate, first-time lookups apart
	// from recomputes (see LookupsBetween).
	Lookups map[string][]Lookups

	stores []*store
}

// Lookups are prefix-cache lookups in tokens, as vllm:prefix_cache_queries_total and
// vllm:prefix_cache_hits_total count them: Queries and Hits of requests admitted for the first
// time, RecomputeQueries and RecomputeHits of preempted requests admitted again to recompute,
// which find their own blocks still cached unless other requests evicted them. The exported
// counters hold both.
type Lookups struct {
	Queries, Hits                   int
	RecomputeQueries, RecomputeHits int
	// Recomputes is how many admissions the recompute lookups were.
	Recomputes int
}

// FirstHitRate is the hit rate of the first-time lookups: what the prefix cache does for the
// prompts, without the recomputes. NaN without a first-time lookup.
func (l Lookups) FirstHitRate() float64 {
	if l.Queries == 0 {
		return math.NaN()
	}
	return float64(l.Hits) / float64(l.Queries)
}

// HitRate is the hit rate the exported counters show: recomputes included.
func (l Lookups) HitRate() float64 {
	if l.Queries+l.RecomputeQueries == 0 {
		return math.NaN()
	}
	return float64(l.Hits+l.RecomputeHits) / float64(l.Queries+l.RecomputeQueries)
}

// LookupsBetween adds up an instance's lookups over the scrape intervals that start in
// [from, to).
func (r *Result) LookupsBetween(instance string, from, to time.Time) Lookups {
	var sum Lookups
	for k, l := range r.Lookups[instance] {
		if at := r.Start.Add(time.Duration(k) * r.Scrape); !at.Before(from) && at.Before(to) {
			sum.Queries += l.Queries
			sum.Hits += l.Hits
			sum.RecomputeQueries += l.RecomputeQueries
			sum.RecomputeHits += l.RecomputeHits
			sum.Recomputes += l.Recomputes
		}
	}
	return sum
}

// Option adjusts a Run.
type Option func(*options)

type options struct {
	spans   bool
	sampleN uint64
}

// WithoutSpans keeps no spans, for long runs that only need metrics.
func WithoutSpans() Option { return func(o *options) { o.spans = false } }

// WithSpanSampling keeps one request span in n (deterministically, by request).
func WithSpanSampling(n int) Option {
	return func(o *options) {
		o.spans = true
		o.sampleN = uint64(max(n, 1))
	}
}

// Run simulates the scenario from start for duration, scraping every instance each scrape
// interval. Simulated time does not sleep: an hour of four busy instances takes seconds.
func Run(sc Scenario, start time.Time, duration, scrape time.Duration, opts ...Option) (*Result, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	if scrape <= 0 || duration < scrape {
		return nil, fmt.Errorf("want a positive scrape interval no longer than the duration, got scrape %v, duration %v", scrape, duration)
	}
	o := options{spans: true}
	for _, opt := range opts {
		opt(&o)
	}
	return runInstances(sc, 0, len(sc.Instances), start, duration, scrape, o)
}

// WriteOpenMetricsInParts simulates the scenario's instances part at a time, metrics only, and
// writes each part's scrapes to w as WriteOpenMetrics does, one part after the other, so that
// memory holds one part's scrapes rather than the fleet's: a fleet of 500 instances over 3 h is
// about 17 GB whole. Each instance is simulated exactly as Run simulates it. The families repeat
// once per part, which promtool's OpenMetrics backfill accepts. It returns the ground truth.
func WriteOpenMetricsInParts(w io.Writer, sc Scenario, start time.Time, duration, scrape time.Duration, part int) ([]Finding, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	if scrape <= 0 || duration < scrape || part < 1 {
		return nil, fmt.Errorf("want a positive scrape interval no longer than the duration and a positive part, got scrape %v, duration %v, part %d", scrape, duration, part)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var truth []Finding
	for lo := 0; lo < len(sc.Instances); lo += part {
		res, err := runInstances(sc, lo, min(lo+part, len(sc.Instances)), start, duration, scrape, options{})
		if err != nil {
			return nil, err
		}
		if err := res.writeFamilies(bw); err != nil {
			return nil, err
		}
		truth = append(truth, res.Truth...)
	}
	if _, err := expfmt.FinalizeOpenMetrics(bw); err != nil {
		return nil, err
	}
	return truth, bw.Flush()
}

// runInstances simulates the scenario's instances from lo to hi (exclusive).
func runInstances(sc Scenario, lo, hi int, start time.Time, duration, scrape time.Duration, o options) (*Result, error) {
	res := &Result{Scenario: sc, Start: start, Duration: duration, Scrape: scrape, ProcessIDs: map[string]int{}, Lookups: map[string][]Lookups{}}
	dur, step := duration.Seconds(), scrape.Seconds()
	sims := make([]*instanceSim, hi-lo)
	spans := make([][]Span, hi-lo)
	res.stores = make([]*store, hi-lo)
	var wg sync.WaitGroup
	for k := range hi - lo {
		i := lo + k
		res.ProcessIDs[sc.Instances[i].Address] = processID(sc.Seed, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newInstanceSim(&sc, i, dur, step)
			s.base = start
			if o.spans {
				s.sampleN = o.sampleN
				s.onSpan = func(sp Span) { spans[k] = append(spans[k], sp) }
			}
			st := newStore(s.in.Address)
			next := 0.0
			onScrape := func(t float64) {
				if s.up() {
					st.scrape(s.metrics.scraped, start.Add(time.Duration(t*1e3)*time.Millisecond))
				}
			}
			s.advance(dur, &next, onScrape)
			for ; next <= dur; next += step {
				s.accumulate(next)
				onScrape(next)
			}
			sims[k], res.stores[k] = s, st
		}()
	}
	wg.Wait()
	for i := range sims {
		res.Spans = append(res.Spans, spans[i]...)
		res.Truth = append(res.Truth, truth(sims[i], start, dur)...)
		lookups := make([]Lookups, len(sims[i].windows))
		for k, w := range sims[i].windows {
			lookups[k] = Lookups{Queries: w.queried, Hits: w.hits, RecomputeQueries: w.requeried, RecomputeHits: w.rehits, Recomputes: w.recomputes}
		}
		res.Lookups[sims[i].in.Address] = lookups
	}
	sort.SliceStable(res.Spans, func(a, b int) bool { return res.Spans[a].Start.Before(res.Spans[b].Start) })
	for _, st := range res.stores {
		if st.err != nil {
			return nil, st.err
		}
	}
	return res, nil
}

// processID is the simulated vLLM API server's process id, stable per scenario and instance.
func processID(seed uint64, index int) int { return 1000 + int(splitmix(seed+uint64(index))%60000) }

// store keeps one instance's scrapes as Prometheus stores them: one row of values per
// scrape per series.
type store struct {
	instance string
	families map[string]*family
	err      error
}

type family struct {
	name, help string
	typ        dto.MetricType
	series     map[string]*series
	order      []*series
}

type series struct {
	labels [][2]string // sorted, with instance and job
	bounds []float64   // histograms: the finite upper bounds
	times  []time.Time
	rows   []float64 // per scrape: a value, or the cumulative buckets then count then sum
}

func newStore(instance string) *store {
	return &store{instance: instance, families: map[string]*family{}}
}

func (st *store) scrape(g prometheus.Gatherer, at time.Time) {
	mfs, err := g.Gather()
	if err != nil {
		st.err = errors.Join(st.err, fmt.Errorf("gathering %s's metrics: %w", st.instance, err))
		return
	}
	for _, mf := range mfs {
		f := st.families[mf.GetName()]
		if f == nil {
			f = &family{name: mf.GetName(), help: mf.GetHelp(), typ: mf.GetType(), series: map[string]*series{}}
			st.families[f.name] = f
		}
		for _, m := range mf.GetMetric() {
			labels := [][2]string{{"instance", st.instance}, {"job", Job}}
			for _, lp := range m.GetLabel() {
				labels = append(labels, [2]string{lp.GetName(), lp.GetValue()})
			}
			slices.SortFunc(labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
			var key strings.Builder
			for _, l := range labels {
				key.WriteString(l[0] + "\x00" + l[1] + "\x00")
			}
			s := f.series[key.String()]
			if s == nil {
				s = &series{labels: labels}
				if h := m.GetHistogram(); h != nil {
					for _, b := range h.GetBucket() {
						s.bounds = append(s.bounds, b.GetUpperBound())
					}
				}
				f.series[key.String()] = s
				f.order = append(f.order, s)
			}
			s.times = append(s.times, at)
			switch f.typ {
			case dto.MetricType_COUNTER:
				s.rows = append(s.rows, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				s.rows = append(s.rows, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					s.rows = append(s.rows, float64(b.GetCumulativeCount()))
				}
				s.rows = append(s.rows, float64(h.GetSampleCount()), h.GetSampleSum())
			}
		}
	}
}

func (s *series) width() int {
	if s.bounds != nil {
		return len(s.bounds) + 2
	}
	return 1
}
