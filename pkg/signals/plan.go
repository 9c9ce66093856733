package signals

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Config is what a client's plans depend on besides the request: the labels that name an
// instance and a model, the scrape interval and the data source's extra matchers.
type Config struct {
	Labels   Labels
	Scrape   time.Duration
	Matchers []*labels.Matcher
}

// Plan is what one Request fetches from Prometheus, made without I/O by NewPlan: every distinct
// PromQL expression, read over each of the ranges, and the instant lookups. Run executes it.
type Plan struct {
	Request    Request
	Grid       series.Grid
	Window     time.Duration
	Generation vllm.Generation
	// Exprs are the distinct range-query expressions, sorted; each is read over every range.
	Exprs  []string
	Ranges []Range
	// Instant are the instant queries: vllm:cache_config_info over the range, when asked.
	Instant []Instant
	// Absent are the wanted signals this Prometheus cannot serve, each with its reason.
	Absent map[series.Signal]string

	serves map[string][]series.Signal // expression → the signals aligned from its answer
	keeps  map[string]string          // expression → the histogram family kept from its answer
	labels Labels
}

// Range is the range of one range query. Past Prometheus's 11,000 points a grid takes several;
// a coarse lookback (Request.CoarseBefore) takes its own at a multiple of the step, each point
// standing for holdSteps grid steps up to before.
type Range struct {
	Start, End time.Time
	Step       time.Duration
	holdSteps  int
	before     time.Time
}

// Instant is one instant query and the time it is evaluated at.
type Instant struct {
	Expr string
	At   time.Time
}

// Grid checks a request's step and range and returns the grid its answer is aligned on.
func (r Request) Grid() (series.Grid, error) {
	if r.Step <= 0 {
		return series.Grid{}, backend.PluginError(fmt.Errorf("step must be positive, got %s", r.Step))
	}
	start, end := r.Start.Truncate(r.Step), r.End.Truncate(r.Step)
	if !end.After(start) {
		return series.Grid{}, backend.PluginError(fmt.Errorf("the time range %s to %s is shorter than one step (%s)", r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339), r.Step))
	}
	return series.NewGrid(start, end, r.Step), nil
}

// NewPlan writes the queries of a request for the metric names a Prometheus holds (det).
func NewPlan(cfg Config, det vllm.Detection, req Request) (*Plan, error) {
	grid, err := req.Grid()
	if err != nil {
		return nil, err
	}
	if det.Generation == vllm.GenerationNone {
		return nil, backend.DownstreamError(fmt.Errorf("%w: check that Prometheus scrapes vLLM's /metrics, that vLLM runs without --disable-log-stats, and that the data source's label matchers %v match its series", ErrNoVLLM, cfg.Matchers))
	}
	window := Window(cfg.Scrape, req.Step)
	b, err := newBuilder(cfg.Labels, Filter{Matchers: cfg.Matchers, Instance: req.Instance, Model: req.Model}, window)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	p := &Plan{Request: req, Grid: grid, Window: window, Generation: det.Generation,
		Absent: map[series.Signal]string{}, serves: map[string][]series.Signal{}, keeps: map[string]string{}, labels: cfg.Labels}
	for _, s := range req.Signals {
		p.add(det, b, s)
	}
	for _, family := range req.Histograms {
		if det.Has(family) {
			e := bucketRates(b, family)
			p.keeps[e] = family
			if _, read := p.serves[e]; !read {
				// Read for the histogram alone; a quantile of the family reads the same expression.
				p.serves[e] = nil
			}
		}
	}
	for e := range p.serves {
		p.Exprs = append(p.Exprs, e)
	}
	sort.Strings(p.Exprs)
	end := grid.Time(grid.Len - 1)
	p.Ranges = spansOf(grid.Start, end, req.Step, req.CoarseBefore, window)
	if req.CacheConfig {
		p.Instant = append(p.Instant, Instant{Expr: cacheConfigExpr(b, grid.Start, end, cfg.Scrape), At: end})
	}
	return p, nil
}

// add maps a signal to the expression that serves it (a derived signal to its parts'), or
// records why this Prometheus cannot serve it.
func (p *Plan) add(det vllm.Detection, b builder, sig series.Signal) {
	d, ok := Lookup(sig)
	if !ok {
		return
	}
	if d.derive != nil {
		p.add(det, b, d.derive.num)
		p.add(det, b, d.derive.den)
		return
	}
	var parts []string
	for _, a := range d.alts {
		if hasAll(det, a.needs) {
			parts = append(parts, a.expr(b))
		}
	}
	if len(parts) == 0 {
		p.Absent[sig] = absentReason(d, det)
		return
	}
	e := strings.Join(parts, " or ")
	for _, s := range p.serves[e] {
		if s == sig {
			return
		}
	}
	p.serves[e] = append(p.serves[e], sig)
}

// cacheConfigExpr reads vllm:cache_config_info, which has no model label, per instance, over
// the range and one scrape interval before it.
func cacheConfigExpr(b builder, start, end time.Time, scrape time.Duration) string {
	noModel := builder{labels: b.labels, window: b.window}
	noModel.matchers = slices.DeleteFunc(slices.Clone(b.matchers), func(m *labels.Matcher) bool { return m.Name == b.labels.Model })
	return noModel.rangeSel(vllm.CacheConfigInfo, end.Sub(start)+scrape)
}

// String is the plan as a frame's executed query: the ranges and steps, then the expressions
// read over them, then the instant lookups.
func (p *Plan) String() string {
	var b strings.Builder
	if len(p.Exprs) > 0 {
		parts := make([]string, len(p.Ranges))
		for i, r := range p.Ranges {
			parts[i] = fmt.Sprintf("%s to %s every %s", series.Stamp(r.Start), series.Stamp(r.End), r.Step)
			if r.holdSteps > 1 {
				parts[i] += " (the lookback, each point held " + fmt.Sprint(r.holdSteps) + " steps)"
			}
		}
		fmt.Fprintf(&b, "Prometheus range queries, rate window %s, %s:\n%s", p.Window, strings.Join(parts, "; "), strings.Join(p.Exprs, "\n"))
	}
	for _, q := range p.Instant {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Prometheus instant query at %s:\n%s", series.Stamp(q.At), q.Expr)
	}
	return b.String()
}
