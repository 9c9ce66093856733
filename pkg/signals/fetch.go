package signals

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// DetectionTTL is how long a detected generation is trusted: a fleet being upgraded changes
// its metric names within minutes, not seconds. A detection reads the names of the range its
// queries read (Client.Detect), so the names of a past deployment do not stay detected in a
// range after it.
const DetectionTTL = 5 * time.Minute

// lookbackDelta is how far before a step Prometheus looks for a gauge's last sample (its
// default lookback delta): a range's first steps read names from that far before it.
const lookbackDelta = 5 * time.Minute

// maxParallel bounds the range queries of one request in flight at once.
const maxParallel = 6

// ErrNoVLLM means Prometheus answered but holds no vllm: series for the data source's matchers.
var ErrNoVLLM = errors.New("Prometheus holds no vLLM metrics (no series named vllm:*)")

// Client queries one Prometheus for vLLM signals. It is safe for concurrent use.
type Client struct {
	api    v1.API
	labels Labels
	scrape time.Duration
	base   []*labels.Matcher // the data source's extra matchers

	mu       sync.Mutex
	detected detected
}

// detected is a detection and the window it read: from and to, zero when unbounded.
type detected struct {
	det      vllm.Detection
	from, to time.Time
	at       time.Time
}

// covers reports whether a detection made at e.at answers for the window from … to at now:
// younger than DetectionTTL and over that window. A detection whose window reached the last
// DetectionTTL before it stands for the names up to DetectionTTL after it too.
func (e detected) covers(from, to, now time.Time) bool {
	if e.at.IsZero() || now.Sub(e.at) >= DetectionTTL {
		return false
	}
	if !e.from.IsZero() && (from.IsZero() || from.Before(e.from)) {
		return false
	}
	end := e.to
	if e.to.IsZero() || !e.to.Before(e.at.Add(-DetectionTTL)) {
		end = e.at.Add(DetectionTTL)
	}
	return !to.IsZero() && !to.After(end)
}

// NewClient returns a client for a Prometheus HTTP API.
func NewClient(api v1.API, names Labels, scrape time.Duration, matchers []*labels.Matcher) *Client {
	return &Client{api: api, labels: names, scrape: scrape, base: matchers}
}

// Request asks for signals over a time range.
type Request struct {
	Signals []series.Signal
	Start   time.Time
	End     time.Time
	Step    time.Duration
	// Instance and Model filter the series: exact values or regular expressions.
	Instance string
	Model    string
	// CacheConfig asks for vllm:cache_config_info as well.
	CacheConfig bool
	// CoarseBefore, when set, reads the grid's points before it (a baseline's hour) at one point
	// per rate window instead of one per step, each value held until the next: every sample is
	// still counted once, at a fraction of the steps.
	CoarseBefore time.Time
	// Histograms are metric families (such as vllm.TimeToFirstToken) whose bucket rates the
	// set keeps whole (series.Set.Histogram), per instance and model, besides the signals; a
	// family this Prometheus lacks is left out.
	Histograms []string
}

// Result is the aligned signals of a request, the plan they were fetched by, and what a user
// should know about them.
type Result struct {
	Set     *series.Set
	Notices []string
	// Queries are the plan's range-query expressions (Plan.Exprs).
	Queries    []string
	Generation vllm.Generation
	Window     time.Duration
	Plan       *Plan
}

// Config returns what the client's plans depend on besides the request.
func (c *Client) Config() Config {
	return Config{Labels: c.labels, Scrape: c.scrape, Matchers: c.base}
}

// Detect returns which vLLM vocabulary the Prometheus holds between from and to (zero: without
// that bound), re-checking it after DetectionTTL. A window without vLLM names is read again
// without bounds: its queries answer no series, not that Prometheus holds no vLLM metrics.
func (c *Client) Detect(ctx context.Context, from, to time.Time) (vllm.Detection, error) {
	now := time.Now()
	c.mu.Lock()
	last := c.detected
	c.mu.Unlock()
	if last.covers(from, to, now) {
		return last.det, nil
	}
	vllmNames := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, "vllm:.+")
	match := (&parser.VectorSelector{LabelMatchers: append([]*labels.Matcher{vllmNames}, c.base...)}).String()
	names, _, _, err := c.api.LabelValues(ctx, model.MetricNameLabel, []string{match}, from, to)
	if err != nil {
		return vllm.Detection{}, downstream("listing metric names", err)
	}
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = string(n)
	}
	d := vllm.Detect(list)
	if d.Generation == vllm.GenerationNone && !(from.IsZero() && to.IsZero()) {
		return c.Detect(ctx, time.Time{}, time.Time{})
	}
	c.mu.Lock()
	c.detected = detected{det: d, from: from, to: to, at: time.Now()}
	c.mu.Unlock()
	return d, nil
}

// detectionWindow is the window that requests read: from the earliest start, less its rate
// window or Prometheus's lookback if longer, to the latest end.
func (c *Client) detectionWindow(reqs []Request) (from, to time.Time) {
	for i, r := range reqs {
		start := r.Start.Add(-max(Window(c.scrape, r.Step), lookbackDelta))
		if i == 0 || start.Before(from) {
			from = start
		}
		if i == 0 || r.End.After(to) {
			to = r.End
		}
	}
	return from, to
}

// Fetch plans a request for the vocabulary this Prometheus holds and runs the plan.
func (c *Client) Fetch(ctx context.Context, req Request) (*Result, error) {
	res, err := c.FetchAll(ctx, req)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// FetchAll plans several requests (the parts of one query) and runs them in one fan-out. A
// request that cannot be planned fails before any query is sent.
func (c *Client) FetchAll(ctx context.Context, reqs ...Request) ([]*Result, error) {
	for _, r := range reqs {
		if _, err := r.Grid(); err != nil {
			return nil, err
		}
	}
	from, to := c.detectionWindow(reqs)
	det, err := c.Detect(ctx, from, to)
	if err != nil {
		return nil, err
	}
	plans := make([]*Plan, len(reqs))
	for i, r := range reqs {
		if plans[i], err = NewPlan(c.Config(), det, r); err != nil {
			return nil, err
		}
	}
	return c.Run(ctx, plans...)
}

// Run executes plans: every range query (each expression over each range) and instant query
// of all of them in one fan-out, at most maxParallel in flight. Each expression's answers are
// aligned on its plan's grid as soon as the last of its ranges arrives, and then dropped: a
// Prometheus matrix takes twice the memory of the grid's series, and a fleet's bucket rates
// are the largest part of a diagnosis.
func (c *Client) Run(ctx context.Context, plans ...*Plan) ([]*Result, error) {
	aligners := make([]*aligner, len(plans))
	configs := make([][]model.Matrix, len(plans))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallel)
	for n, p := range plans {
		a := newAligner(p)
		aligners[n] = a
		for i, e := range p.Exprs {
			for k, r := range p.Ranges {
				g.Go(func() error {
					v, warn, _, err := c.api.QueryRange(gctx, e, v1.Range{Start: r.Start, End: r.End, Step: r.Step})
					if err != nil {
						return downstream("range query", err)
					}
					m, ok := v.(model.Matrix)
					if !ok {
						return backend.DownstreamError(fmt.Errorf("Prometheus answered a range query with a %s instead of a matrix", v.Type()))
					}
					a.answer(i, k, r.hold(m, p.Request.Step), warn)
					return nil
				})
			}
		}
		configs[n] = make([]model.Matrix, len(p.Instant))
		for k, q := range p.Instant {
			g.Go(func() error {
				v, _, _, err := c.api.Query(gctx, q.Expr, q.At)
				if err != nil {
					return downstream("reading vllm:cache_config_info", err)
				}
				configs[n][k], _ = v.(model.Matrix)
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]*Result, len(plans))
	for n, a := range aligners {
		out[n] = a.finish(configs[n])
	}
	return out, nil
}

// aligner builds one plan's result from its answers, in whatever order they arrive.
type aligner struct {
	p   *Plan
	mu  sync.Mutex
	set *series.Set
	// Per expression: the ranges not yet answered, the answers held until then, each range's
	// warnings, and whether it is aligned.
	pending  []int
	pieces   [][]model.Matrix
	warnings [][][]string
	aligned  []bool
}

func newAligner(p *Plan) *aligner {
	a := &aligner{p: p, set: series.NewSet(p.Grid), pending: make([]int, len(p.Exprs)),
		pieces: make([][]model.Matrix, len(p.Exprs)), warnings: make([][][]string, len(p.Exprs)), aligned: make([]bool, len(p.Exprs))}
	for sig, reason := range p.Absent {
		a.set.Absent[sig] = reason
	}
	for i := range p.Exprs {
		a.pending[i] = len(p.Ranges)
		a.pieces[i], a.warnings[i] = make([]model.Matrix, len(p.Ranges)), make([][]string, len(p.Ranges))
	}
	return a
}

// answer takes the answer of expression i over range k, and aligns the expression once all
// its ranges are in.
func (a *aligner) answer(i, k int, m model.Matrix, warnings []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pieces[i][k], a.warnings[i][k] = m, warnings
	a.pending[i]--
	if a.pending[i] == 0 {
		a.align(i)
	}
}

// align copies expression i's answers onto the grid, for every signal it serves, and drops them.
func (a *aligner) align(i int) {
	e := a.p.Exprs[i]
	var m model.Matrix
	for _, piece := range a.pieces[i] {
		m = append(m, piece...)
	}
	hists := map[string]map[series.Key]*series.Histogram{}
	for _, sig := range a.p.serves[e] {
		alignSignal(a.set, a.p.labels, sig, m, hists, e)
	}
	if family, ok := a.p.keeps[e]; ok {
		h, ok := hists[e]
		if !ok {
			h = histograms(m, a.p.labels, a.set.Grid)
		}
		for key, hist := range h {
			a.set.PutHistogram(family, key, hist)
		}
	}
	a.pieces[i], a.aligned[i] = nil, true
}

// finish completes the result once every answer is in: the cache configurations, the derived
// signals and the notices, in the plan's order.
func (a *aligner) finish(configs []model.Matrix) *Result {
	p, set := a.p, a.set
	res := &Result{Set: set, Queries: p.Exprs, Generation: p.Generation, Window: p.Window, Plan: p}
	for i := range p.Exprs {
		if !a.aligned[i] {
			a.align(i)
		}
		for _, w := range a.warnings[i] {
			res.Notices = appendNew(res.Notices, w...)
		}
	}
	for _, m := range configs {
		cacheConfigs(set, p.labels, m)
	}
	derive(set, p.Request.Signals)
	for _, sig := range p.Request.Signals {
		if reason, ok := set.Absent[sig]; ok {
			res.Notices = append(res.Notices, reason)
			continue
		}
		if !hasAny(set, sig) {
			res.Notices = append(res.Notices, fmt.Sprintf("%s: no data in this range for the selected instances and models", sig))
		}
	}
	return res
}

func hasAll(det vllm.Detection, needs []string) bool {
	for _, n := range needs {
		if !det.Has(n) {
			return false
		}
	}
	return true
}

// absentReason names the metrics a signal would need that this Prometheus lacks, and the vLLM
// releases that export them.
func absentReason(d *Def, det vllm.Detection) string {
	var missing []string
	seen := map[string]bool{}
	for _, n := range d.needs() {
		if !seen[n] && !det.Has(n) {
			seen[n] = true
			missing = append(missing, n)
		}
	}
	if d.Group == groupSpec {
		return fmt.Sprintf("%s: not applicable: no speculative-decoding metrics (%s); vLLM exports them only while speculative decoding is on", d.Name, strings.Join(missing, ", "))
	}
	parts := make([]string, 0, len(missing))
	for _, n := range missing {
		parts = append(parts, fmt.Sprintf("%s (%s)", n, vllm.Availability(n)))
	}
	return fmt.Sprintf("%s: not available: this Prometheus has none of %s", d.Name, strings.Join(parts, "; "))
}

// alignSignal copies a matrix onto the set's grid. A quantile signal's matrix holds bucket
// rates: its values and bucket intervals are computed from each key's own buckets.
func alignSignal(set *series.Set, labels Labels, sig series.Signal, m model.Matrix, hists map[string]map[series.Key]*series.Histogram, expr string) {
	d, _ := Lookup(sig)
	if d.q > 0 {
		h, ok := hists[expr]
		if !ok {
			h = histograms(m, labels, set.Grid)
			hists[expr] = h
		}
		for key, hist := range h {
			s := series.NewSeries(sig, key, set.Grid.Len)
			fillQuantile(hist, d.q, s)
			set.Put(s)
		}
		return
	}
	for _, stream := range m {
		key := series.Key{Instance: string(stream.Metric[model.LabelName(labels.Instance)]), Model: string(stream.Metric[model.LabelName(labels.Model)])}
		s := set.Get(key, sig)
		if s == nil {
			s = series.NewSeries(sig, key, set.Grid.Len)
			set.Put(s)
		}
		for _, p := range stream.Values {
			i, ok := set.Grid.Index(p.Timestamp.Time())
			if !ok {
				continue
			}
			v := float64(p.Value)
			if math.IsInf(v, 0) {
				v = math.NaN()
			}
			s.Values[i] = v
		}
	}
}

// derive computes the signals defined as ratios of others, with their intervals.
func derive(set *series.Set, wanted []series.Signal) {
	for _, sig := range wanted {
		d, ok := Lookup(sig)
		if !ok || d.derive == nil {
			continue
		}
		for _, key := range set.Keys() {
			num, den := set.Get(key, d.derive.num), set.Get(key, d.derive.den)
			if num == nil || den == nil {
				continue
			}
			s := series.NewSeries(sig, key, set.Grid.Len)
			bounded := num.HasBounds() && den.HasBounds()
			if bounded {
				s.Lower, s.Upper = series.NaNs(set.Grid.Len), series.NaNs(set.Grid.Len)
			}
			for i := range s.Values {
				s.Values[i] = num.Values[i] / den.Values[i]
				if bounded {
					s.Lower[i] = num.Lower[i] / den.Upper[i]
					s.Upper[i] = num.Upper[i] / den.Lower[i]
				}
			}
			set.Put(s)
		}
		if _, absent := set.Absent[d.derive.num]; absent {
			set.Absent[sig] = fmt.Sprintf("%s: not available: %s", sig, set.Absent[d.derive.num])
		}
	}
}

func hasAny(set *series.Set, sig series.Signal) bool {
	for _, k := range set.Keys() {
		if s := set.Get(k, sig); s != nil {
			for _, v := range s.Values {
				if !math.IsNaN(v) {
					return true
				}
			}
		}
	}
	return false
}

// cacheConfigs reads the answer of the cache-configuration lookup. A restart with other flags
// leaves the old configuration's series in the range too, so each instance keeps the series
// sampled last.
func cacheConfigs(set *series.Set, l Labels, m model.Matrix) {
	newest := map[string]model.Time{}
	for _, s := range m {
		if len(s.Values) == 0 {
			continue
		}
		instance := string(s.Metric[model.LabelName(l.Instance)])
		last := s.Values[len(s.Values)-1].Timestamp
		if seen, ok := newest[instance]; ok && seen >= last {
			continue
		}
		newest[instance] = last
		labels := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		set.CacheConfig[instance] = vllm.ParseCacheConfig(labels)
	}
}

// downstream marks a Prometheus failure as the downstream service's, with what we were doing.
func downstream(doing string, err error) error {
	var perr *v1.Error
	if errors.As(err, &perr) && perr.Type == v1.ErrBadData {
		return backend.PluginError(fmt.Errorf("Prometheus rejected the query while %s: %s", doing, perr.Msg))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return backend.DownstreamError(fmt.Errorf("Prometheus did not answer in time while %s: %w", doing, err))
	}
	return backend.DownstreamError(fmt.Errorf("Prometheus failed while %s: %w", doing, err))
}
