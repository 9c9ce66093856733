package correlate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/internal/option"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// State is one signal around one request; NaN when there is no sample.
type State struct {
	// AtStart is the last sample at or before the request's start.
	AtStart float64
	// Worst is the worst sample from that one to the request's end.
	Worst float64
}

// Row is one request joined with its metrics and findings.
type Row struct {
	traces.Request
	// ModelFromMetrics: the span had no model and the instance's only model was taken.
	ModelFromMetrics bool
	// MetricsAt is the time of the as-of sample (zero when the request started before the grid).
	MetricsAt time.Time
	// States follow series.Joined.
	States []State
	// Findings are the findings active while the request ran.
	Findings []*diagnosis.Finding
	// DecodePerToken is decode time per output token after the first, NaN when unknown.
	DecodePerToken float64
	// Standout is TTFT over the instance's typical TTFT across the range (Input.Typical); NaN
	// when either is unknown.
	Standout float64
	// Reasons say why the request stands out in its window; empty when it does not.
	Reasons []Reason
}

// State returns the request's state of a joined signal, NaN values when it is not joined.
func (r *Row) State(s series.Signal) State {
	for i, j := range series.Joined {
		if j.Signal == s && i < len(r.States) {
			return r.States[i]
		}
	}
	return State{AtStart: math.NaN(), Worst: math.NaN()}
}

// FindingRules returns the rule ids of the active findings, in order, without repeats.
func (r *Row) FindingRules() []string {
	var out []string
	for _, f := range r.Findings {
		if !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	return out
}

// Input is what a join reads.
type Input struct {
	Requests []traces.Request
	// Set holds the joined signals (and request_rate for coverage); nil joins no metrics.
	Set      *series.Set
	Findings []diagnosis.Finding
	// From and To are the window the requests were searched in, for coverage.
	From, To time.Time
	// Truncated: the search returned as many requests as it was allowed, so more may exist.
	Truncated bool
	// Typical is each instance's typical TTFT over the range (see TypicalTTFT): rows get their
	// Standout from it, and the reason ttft_above_typical when they reach StandoutFactor times it.
	Typical map[string]float64
}

// Options tune the anomaly reasons; the zero value uses the defaults.
type Options struct {
	// MinRequests is the fewest requests with the values involved for a window statistic (20).
	MinRequests int
	// ResidualFactor flags TTFT residuals above this many robust scales (3).
	ResidualFactor float64
	// DecodeFactor flags decode time per token above this many window medians (3).
	DecodeFactor float64
	// MinQueue is the least queue time, in seconds, for queue_over_half (0.1).
	MinQueue float64
	// StandoutFactor flags TTFTs at or above this many times the instance's typical TTFT
	// (DefaultStandoutFactor).
	StandoutFactor float64
}

// Defaults of Options.
const (
	DefaultMinRequests    = series.MinRequests
	DefaultResidualFactor = 3
	DefaultDecodeFactor   = 3
	DefaultMinQueue       = 0.1
)

func (o Options) withDefaults() Options {
	o.MinRequests = option.PositiveOr(o.MinRequests, DefaultMinRequests)
	o.ResidualFactor = option.PositiveOr(o.ResidualFactor, DefaultResidualFactor)
	o.DecodeFactor = option.PositiveOr(o.DecodeFactor, DefaultDecodeFactor)
	o.MinQueue = option.PositiveOr(o.MinQueue, DefaultMinQueue)
	o.StandoutFactor = option.PositiveOr(o.StandoutFactor, DefaultStandoutFactor)
	return o
}

// Result is a join.
type Result struct {
	// Rows are the requests in the order given.
	Rows     []Row
	Window   WindowStats
	Coverage Coverage
	// Notices say what the join could not do, in words a user can act on.
	Notices []string
}

// Join joins requests with metric states and findings, and flags anomalies, in two passes
// over the requests: the first builds each row whole (its copy, model, states, findings and
// standout, while it is in cache) and gathers the window's values, the second flags the rows
// against the window's statistics. Each request looks its instance up once (instanceIndex),
// and the rows, their states and their findings are one allocation each.
func Join(in Input, opts Options) Result {
	opts = opts.withDefaults()
	ix := indexInstances(in)
	rows := make([]Row, len(in.Requests))
	states := make([]State, len(in.Requests)*len(series.Joined))
	var g series.Grid
	if in.Set != nil {
		g = in.Set.Grid
	}
	var fs rowFindings
	fs.ends = make([]int, len(rows))
	w := newWindowValues(len(rows))
	for i := range in.Requests {
		r := &rows[i]
		r.Request = in.Requests[i]
		r.States = states[i*len(series.Joined) : (i+1)*len(series.Joined) : (i+1)*len(series.Joined)]
		for j := range r.States {
			r.States[j] = State{AtStart: math.NaN(), Worst: math.NaN()}
		}
		r.DecodePerToken = DecodePerToken(&r.Request)
		id := ix.of[i]
		ix.fillModel(r, id)
		ix.joinStates(r, id, g)
		fs.add(i, r, ix.findings[id])
		ix.standout(r, id, opts.StandoutFactor)
		w.add(r)
	}
	fs.cut(rows)
	res := Result{Rows: rows, Window: w.stats(opts)}
	res.Notices = append(res.Notices, ix.modelNotices()...)
	res.Notices = append(res.Notices, flag(rows, res.Window, opts)...)
	res.Coverage = coverage(in, len(in.Requests))
	return res
}

// DecodePerToken is a request's time per output token: its decode time divided by the tokens
// after the first, as vLLM's request_time_per_output_token does; NaN when the span lacks either
// or the request has no token after the first.
func DecodePerToken(r *traces.Request) float64 {
	if !r.Present.Has(traces.FieldDecode) || !r.Present.Has(traces.FieldOutputTokens) || r.OutputTokens < 2 {
		return math.NaN()
	}
	return r.Decode / float64(r.OutputTokens-1)
}

// instanceIndex numbers the instances of a join's requests, so that each request looks its
// instance up once and what the join reads and counts per instance is a slice, not a map.
type instanceIndex struct {
	// of is each request's instance number.
	of []int32
	// names are the instances by number.
	names []string
	// keys are, per instance, its models in the metrics with their joined series.
	keys [][]keySeries
	// findings are, per instance, its findings by start time.
	findings [][]*diagnosis.Finding
	// typical is, per instance, Input.Typical; NaN when absent.
	typical []float64
	// anyMetrics: the set has at least one key.
	anyMetrics bool
	// several and unknown count, per instance, the requests without a model that fillModel
	// could not give one: the instance serves several models, or none in the metrics.
	several, unknown []int
}

// keySeries is one model of an instance: values[j] is its series of series.Joined[j], nil when absent.
type keySeries struct {
	model  string
	values [][]float64
}

func indexInstances(in Input) instanceIndex {
	ids := map[string]int32{}
	ix := instanceIndex{of: make([]int32, len(in.Requests))}
	for i := range in.Requests {
		inst := in.Requests[i].Instance
		id, ok := ids[inst]
		if !ok {
			id = int32(len(ix.names))
			ids[inst] = id
			ix.names = append(ix.names, inst)
		}
		ix.of[i] = id
	}
	n := len(ix.names)
	ix.keys, ix.findings, ix.typical = make([][]keySeries, n), make([][]*diagnosis.Finding, n), make([]float64, n)
	ix.several, ix.unknown = make([]int, n), make([]int, n)
	for id, inst := range ix.names {
		t, ok := in.Typical[inst]
		if !ok {
			t = math.NaN()
		}
		ix.typical[id] = t
	}
	if in.Set != nil {
		for _, k := range in.Set.Keys() {
			ix.anyMetrics = true
			id, ok := ids[k.Instance]
			if !ok || slices.ContainsFunc(ix.keys[id], func(ks keySeries) bool { return ks.model == k.Model }) {
				continue
			}
			ks := keySeries{model: k.Model}
			for j, js := range series.Joined {
				if s := in.Set.Get(k, js.Signal); s != nil {
					if ks.values == nil {
						ks.values = make([][]float64, len(series.Joined))
					}
					ks.values[j] = s.Values
				}
			}
			ix.keys[id] = append(ix.keys[id], ks)
		}
	}
	for i := range in.Findings {
		f := &in.Findings[i]
		if id, ok := ids[f.Key.Instance]; ok {
			ix.findings[id] = append(ix.findings[id], f)
		}
	}
	for _, fs := range ix.findings {
		slices.SortStableFunc(fs, func(a, b *diagnosis.Finding) int { return a.Start.Compare(b.Start) })
	}
	return ix
}

// fillModel gives a request without a model its instance's only model, and counts those it
// cannot give one for modelNotices.
func (ix *instanceIndex) fillModel(r *Row, id int32) {
	if r.Model != "" {
		return
	}
	switch ks := ix.keys[id]; len(ks) {
	case 0:
		ix.unknown[id]++
	case 1:
		r.Model, r.ModelFromMetrics = ks[0].model, true
	default:
		ix.several[id]++
	}
}

// modelNotices say which instances' requests fillModel could not give a model, and why.
func (ix *instanceIndex) modelNotices() []string {
	order := make([]int, len(ix.names))
	for id := range order {
		order[id] = id
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ix.names[a], ix.names[b]) })
	var notes []string
	for _, id := range order {
		if ix.several[id] == 0 {
			continue
		}
		models := make([]string, len(ix.keys[id]))
		for m, ks := range ix.keys[id] {
			models[m] = ks.model
		}
		notes = append(notes, fmt.Sprintf("%d request(s) of %s have no model attribute and the instance serves %s in the metrics: "+
			"their metric state is not joined and findings match on the instance only; set spanModelAttribute to an attribute that names the model",
			ix.several[id], instanceName(ix.names[id]), strings.Join(models, ", ")))
	}
	for _, id := range order {
		if ix.unknown[id] == 0 || !ix.anyMetrics {
			continue
		}
		notes = append(notes, fmt.Sprintf("%d request(s) come from instance %s, which has no vLLM metrics in this range: "+
			"check that spanInstanceAttribute names an attribute whose value equals the Prometheus instance label",
			ix.unknown[id], instanceName(ix.names[id])))
	}
	return notes
}

func instanceName(inst string) string {
	if inst == "" {
		return `"" (the span has no instance attribute)`
	}
	return inst
}

// joinStates reads a row's states from its key's series. The grid is regular, so the as-of
// sample is index arithmetic and the rows need no sorting.
func (ix *instanceIndex) joinStates(r *Row, id int32, g series.Grid) {
	if r.Model == "" || g.Len == 0 || g.Step <= 0 {
		return
	}
	var values [][]float64
	for _, ks := range ix.keys[id] {
		if ks.model == r.Model {
			values = ks.values
			break
		}
	}
	if values == nil {
		return
	}
	first, ok := g.Index(r.Start)
	if !ok {
		return
	}
	last, _ := g.Index(r.End)
	last = max(last, first)
	r.MetricsAt = g.Time(first)
	for j, v := range values {
		if v != nil {
			r.States[j] = stateOf(v, first, last, series.Joined[j].LowerIsWorse)
		}
	}
}

func stateOf(v []float64, first, last int, lowerIsWorse bool) State {
	st := State{AtStart: v[first], Worst: math.NaN()}
	for _, x := range v[first : last+1] {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(st.Worst) || (lowerIsWorse && x < st.Worst) || (!lowerIsWorse && x > st.Worst) {
			st.Worst = x
		}
	}
	return st
}

// rowFindings collects the findings of the rows in one backing array, cut into each row's
// list once it is complete (appending may move it).
type rowFindings struct {
	backing []*diagnosis.Finding
	// ends[i] is where row i's findings end in backing.
	ends []int
}

// add collects the findings of the row's instance (and model) that overlap row i; fs are
// sorted by start.
func (c *rowFindings) add(i int, r *Row, fs []*diagnosis.Finding) {
	for _, f := range fs {
		if f.Start.After(r.End) {
			break // none of the later ones can overlap
		}
		if f.End.Before(r.Start) || (r.Model != "" && f.Key.Model != "" && f.Key.Model != r.Model) {
			continue
		}
		c.backing = append(c.backing, f)
	}
	c.ends[i] = len(c.backing)
}

func (c *rowFindings) cut(rows []Row) {
	from := 0
	for i, end := range c.ends {
		if end > from {
			rows[i].Findings = c.backing[from:end:end]
		}
		from = end
	}
}

// Coverage is how many of the window's finished requests have a span.
type Coverage struct {
	// Spans is the number of requests the search returned.
	Spans int
	// Finished is the number of requests that finished in the window per the metrics; NaN
	// when the metrics lack request_rate.
	Finished float64
	// Truncated: the search stopped at its limit, so Spans is a lower bound.
	Truncated bool
}

// Known reports whether the metrics gave a count of finished requests.
func (c Coverage) Known() bool { return !math.IsNaN(c.Finished) }

// Text is the coverage as a notice, such as "12 of 3,400 requests ... have a span".
func (c Coverage) Text() string {
	if !c.Known() {
		return fmt.Sprintf("%d request span(s) found; the metrics have no vllm:request_success_total in this range, so how many requests finished is unknown", c.Spans)
	}
	spans := thousands(float64(c.Spans))
	if c.Truncated {
		spans = "at least " + spans + " (the search stopped at its limit)"
	}
	s := fmt.Sprintf("%s of %s requests that finished in this range (per vllm:request_success_total) have a span", spans, thousands(c.Finished))
	if c.Finished > 0 && float64(c.Spans) < 0.9*c.Finished && !c.Truncated {
		s += ": traces are sampled, so percentiles taken from spans are biased; use the metrics for rates and quantiles"
	}
	return s
}

func coverage(in Input, spans int) Coverage {
	return coverageOf(in, spans, func(series.Key) bool { return true })
}

// CoverageByInstance is the coverage of each instance that has spans or a request rate: what
// share of its finished requests the search examined, which differs between instances when
// their searches stopped at their limits or their traffic differs.
func CoverageByInstance(in Input) map[string]Coverage {
	spans := map[string]int{}
	for _, r := range in.Requests {
		spans[r.Instance]++
	}
	if in.Set != nil {
		for _, k := range in.Set.Keys() {
			if _, ok := spans[k.Instance]; !ok {
				spans[k.Instance] = 0
			}
		}
	}
	out := make(map[string]Coverage, len(spans))
	for inst, n := range spans {
		out[inst] = coverageOf(in, n, func(k series.Key) bool { return k.Instance == inst })
	}
	return out
}

func coverageOf(in Input, spans int, keep func(series.Key) bool) Coverage {
	c := Coverage{Spans: spans, Finished: math.NaN(), Truncated: in.Truncated}
	if in.Set == nil {
		return c
	}
	g := in.Set.Grid
	from, to := in.From, in.To
	sum, seen := 0.0, false
	for _, k := range in.Set.Keys() {
		if !keep(k) {
			continue
		}
		s := in.Set.Get(k, series.RequestRate)
		if s == nil {
			continue
		}
		// Each sample is the mean rate over the window ending at it; one step's worth of it is
		// the requests of that step.
		for i, v := range s.Values {
			t := g.Time(i)
			if math.IsNaN(v) || !t.After(from) || t.After(to) {
				continue
			}
			sum += v * g.Step.Seconds()
			seen = true
		}
	}
	if seen {
		c.Finished = math.Round(sum)
	}
	return c
}

// thousands writes a count with thousands separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
