package signals

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
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
// its metric names within minutes, not seconds.
const DetectionTTL = 5 * time.Minute

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

	mu         sync.Mutex
	detection  vllm.Detection
	detectedAt time.Time
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
}

// Result is the aligned signals of a request and what a user should know about them.
type Result struct {
	Set        *series.Set
	Notices    []string
	Queries    []string
	Generation vllm.Generation
	Window     time.Duration
}

// Detect returns which vLLM vocabulary the Prometheus holds, re-checking it after DetectionTTL.
func (c *Client) Detect(ctx context.Context) (vllm.Detection, error) {
	c.mu.Lock()
	if !c.detectedAt.IsZero() && time.Since(c.detectedAt) < DetectionTTL {
		d := c.detection
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()

	vllmNames := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, "vllm:.+")
	match := (&parser.VectorSelector{LabelMatchers: append([]*labels.Matcher{vllmNames}, c.base...)}).String()
	names, _, _, err := c.api.LabelValues(ctx, model.MetricNameLabel, []string{match}, time.Time{}, time.Time{})
	if err != nil {
		return vllm.Detection{}, downstream("listing metric names", err)
	}
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = string(n)
	}
	d := vllm.Detect(list)
	c.mu.Lock()
	c.detection, c.detectedAt = d, time.Now()
	c.mu.Unlock()
	return d, nil
}

// Fetch runs the range queries of a request, each distinct query once and several at a time,
// and aligns the answers on the request's grid.
func (c *Client) Fetch(ctx context.Context, req Request) (*Result, error) {
	if req.Step <= 0 {
		return nil, backend.PluginError(fmt.Errorf("step must be positive, got %s", req.Step))
	}
	start, end := req.Start.Truncate(req.Step), req.End.Truncate(req.Step)
	if !end.After(start) {
		return nil, backend.PluginError(fmt.Errorf("the time range %s to %s is shorter than one step (%s)", req.Start.Format(time.RFC3339), req.End.Format(time.RFC3339), req.Step))
	}
	det, err := c.Detect(ctx)
	if err != nil {
		return nil, err
	}
	if det.Generation == vllm.GenerationNone {
		return nil, backend.DownstreamError(fmt.Errorf("%w: check that Prometheus scrapes vLLM's /metrics, that vLLM runs without --disable-log-stats, and that the data source's label matchers %v match its series", ErrNoVLLM, c.base))
	}
	window := Window(c.scrape, req.Step)
	b, err := newBuilder(c.labels, Filter{Matchers: c.base, Instance: req.Instance, Model: req.Model}, window)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	set := series.NewSet(series.NewGrid(start, end, req.Step))
	res := &Result{Set: set, Generation: det.Generation, Window: window}

	plan := c.plan(det, b, req.Signals, set)
	exprs := make([]string, 0, len(plan))
	for e := range plan {
		exprs = append(exprs, e)
	}
	sort.Strings(exprs)
	res.Queries = exprs

	spans := spansOf(start, end, req.Step, req.CoarseBefore, window)
	matrices := make([][]model.Matrix, len(exprs))
	warnings := make([][][]string, len(exprs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallel)
	for i, e := range exprs {
		matrices[i], warnings[i] = make([]model.Matrix, len(spans)), make([][]string, len(spans))
		for k, sp := range spans {
			g.Go(func() error {
				v, warn, _, err := c.api.QueryRange(gctx, e, v1.Range{Start: sp.start, End: sp.end, Step: sp.step})
				if err != nil {
					return downstream("range query", err)
				}
				m, ok := v.(model.Matrix)
				if !ok {
					return backend.DownstreamError(fmt.Errorf("Prometheus answered a range query with a %s instead of a matrix", v.Type()))
				}
				matrices[i][k], warnings[i][k] = sp.hold(m, req.Step), warn
				return nil
			})
		}
	}
	if req.CacheConfig {
		g.Go(func() error { return c.cacheConfig(gctx, b, start, end, set) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	hists := map[string]map[series.Key]*histogram{}
	for i, e := range exprs {
		var m model.Matrix
		for k := range spans {
			res.Notices = appendNew(res.Notices, warnings[i][k]...)
			m = append(m, matrices[i][k]...)
		}
		for _, sig := range plan[e] {
			c.align(set, sig, m, hists, e)
		}
	}
	c.derive(set, req.Signals)
	for _, sig := range req.Signals {
		if reason, ok := set.Absent[sig]; ok {
			res.Notices = append(res.Notices, reason)
			continue
		}
		if !hasAny(set, sig) {
			res.Notices = append(res.Notices, fmt.Sprintf("%s: no data in this range for the selected instances and models", sig))
		}
	}
	return res, nil
}

// plan maps each distinct PromQL expression to the signals it serves, and records the
// signals that this Prometheus cannot serve.
func (c *Client) plan(det vllm.Detection, b builder, wanted []series.Signal, set *series.Set) map[string][]series.Signal {
	plan := map[string][]series.Signal{}
	var add func(sig series.Signal)
	add = func(sig series.Signal) {
		d, ok := Lookup(sig)
		if !ok {
			return
		}
		if d.derive != nil {
			add(d.derive.num)
			add(d.derive.den)
			return
		}
		var parts []string
		for _, a := range d.alts {
			if hasAll(det, a.needs) {
				parts = append(parts, a.expr(b))
			}
		}
		if len(parts) == 0 {
			set.Absent[sig] = absentReason(d, det)
			return
		}
		e := strings.Join(parts, " or ")
		for _, s := range plan[e] {
			if s == sig {
				return
			}
		}
		plan[e] = append(plan[e], sig)
	}
	for _, s := range wanted {
		add(s)
	}
	return plan
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

// align copies a matrix onto the set's grid. A quantile signal's matrix holds bucket rates:
// its values and bucket intervals are computed from each key's own buckets.
func (c *Client) align(set *series.Set, sig series.Signal, m model.Matrix, hists map[string]map[series.Key]*histogram, expr string) {
	d, _ := Lookup(sig)
	if d.q > 0 {
		h, ok := hists[expr]
		if !ok {
			h = histograms(m, c.labels, set.Grid)
			hists[expr] = h
		}
		for key, hist := range h {
			s := series.NewSeries(sig, key, set.Grid.Len)
			hist.quantile(d.q, s)
			set.Put(s)
		}
		return
	}
	for _, stream := range m {
		key := series.Key{Instance: string(stream.Metric[model.LabelName(c.labels.Instance)]), Model: string(stream.Metric[model.LabelName(c.labels.Model)])}
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
func (c *Client) derive(set *series.Set, wanted []series.Signal) {
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

// cacheConfig reads vllm:cache_config_info, which has no model label, per instance. A restart
// with other flags leaves the old configuration's series in the range too, so each instance
// keeps the series sampled last.
func (c *Client) cacheConfig(ctx context.Context, b builder, start, end time.Time, set *series.Set) error {
	noModel := builder{labels: b.labels, window: b.window}
	noModel.matchers = slices.DeleteFunc(slices.Clone(b.matchers), func(m *labels.Matcher) bool { return m.Name == b.labels.Model })
	expr := noModel.rangeSel(vllm.CacheConfigInfo, end.Sub(start)+c.scrape)
	v, _, _, err := c.api.Query(ctx, expr, end)
	if err != nil {
		return downstream("reading vllm:cache_config_info", err)
	}
	m, _ := v.(model.Matrix)
	newest := map[string]model.Time{}
	for _, s := range m {
		if len(s.Values) == 0 {
			continue
		}
		instance := string(s.Metric[model.LabelName(b.labels.Instance)])
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
	return nil
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
