package diagnosis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Finding is one firing interval of a rule on one key. Time convention: Start is the step where
// the condition first held in the run that went on to last `for` (Prometheus' activeAt, so a
// finding covers its pending part too), End the last step where it held, FiringAt the step where
// it had held for `for`.
type Finding struct {
	Rule     string
	Key      series.Key
	Start    time.Time
	End      time.Time
	FiringAt time.Time
	// Active means the condition still held (or its data had a gap shorter than `for`) at the
	// last step.
	Active   bool
	Severity Severity
	Title    string
	Text     string
	Cause    string
	Action   string
	// Variant names a more specific reading of the data that replaced the rule's cause, such as
	// "shared_prefix_shorter_than_block".
	Variant    string
	Evidence   Evidence
	Confidence Confidence
	// SecondaryTo is the id of a specific cause firing on the same instance that explains this
	// symptom (the root one, when that cause is itself explained by another); the finding's
	// severity is then info.
	SecondaryTo string
	// Headline marks the instance's likely bottleneck: one finding per instance.
	Headline bool
	// Recommendation is the value the action should set, from the instance's own series over
	// the finding's window (see recommend.go); Value is NaN when it cannot be had.
	Recommendation Recommendation

	title   string // the rule's title, before "on instance X"
	summary string
	gaps    int
	minReq  float64
	margin  float64
	forDur  time.Duration
	quant   bool
	minReqs int
}

// Tags are the annotation tags: rule, severity, instance.
func (f Finding) Tags() []string { return []string{f.Rule, string(f.Severity), f.Key.Instance} }

// Evidence is what a finding rests on.
type Evidence struct {
	// Values are each evidence signal (and each baseline) at the finding's start, peak (the step
	// where the condition held by the largest margin) and end.
	Values     []EvidenceValue
	Thresholds []Param
	// Requests is the request count of the rate window at start, peak and end; NaN without it.
	Requests [3]float64
	// Derived is what the condition computed from its signals at the peak, in words, such as
	// prefix_cache_miss's discount of recompute lookups; empty for a rule that compares its
	// signals as they are.
	Derived string
}

// EvidenceValue is one signal at a finding's start, peak and end. A baseline entry holds the
// baseline median, with the median of bucket upper bounds as Upper for quantiles.
type EvidenceValue struct {
	Signal   series.Signal
	Baseline bool
	Start    Sample
	Peak     Sample
	End      Sample
}

// Sample is a value with, for quantiles, its histogram bucket (Lower, Upper]; NaN bounds
// otherwise.
type Sample struct {
	Value, Lower, Upper float64
}

// Confidence grades a finding: high when at least three of its four criteria hold, medium with
// two, low with fewer.
type Confidence struct {
	Level    string
	Criteria []Criterion
}

// Criterion is one confidence criterion and whether the finding meets it.
type Criterion struct {
	Name   string
	Met    bool
	Detail string
}

// The confidence criteria's limits.
const (
	// strongMargin: at its peak the condition held by at least 10% past its tightest threshold.
	strongMargin = 0.10
	// longRun: the finding lasted at least twice its rule's `for`.
	longRun = 2
	// manyRequests: a quantile rule's windows held at least five times the minimum requests.
	manyRequests = 5
)

func newFinding(e *env, sp span, outs []outcome, opts Options) *Finding {
	r, g := e.rule, e.set.Grid
	// The summary and evidence show the baselines the condition was judged against.
	e.anchor = sp.start
	defer func() { e.anchor = -1 }()
	f := &Finding{
		Rule: r.ID, Key: e.key, Start: g.Time(sp.start), End: g.Time(sp.end), FiringAt: g.Time(sp.firedAt),
		Active: sp.active, Severity: r.Severity, Cause: r.Cause, Action: r.Action, title: r.Title,
		margin: outs[sp.peak].margin, forDur: r.For, quant: r.Quantile, minReqs: opts.MinRequests,
		minReq: math.Inf(1),
	}
	for i := sp.start; i <= sp.end; i++ {
		switch outs[i].v {
		case holds:
			if outs[i].severity.Rank() > f.Severity.Rank() {
				f.Severity = outs[i].severity
			}
			if n := e.optional(series.RequestCount, i); !math.IsNaN(n) {
				f.minReq = math.Min(f.minReq, n)
			}
		case unknown:
			f.gaps++
		}
	}
	if r.refine != nil {
		if variant, cause, action := r.refine(e, sp); variant != "" {
			f.Variant = variant
			if cause != "" {
				f.Cause = cause
			}
			if action != "" {
				f.Action = action
			}
		}
	}
	f.summary = r.summary(e, sp.peak)
	f.Recommendation = recommendFor(e, sp)
	f.Evidence = evidenceOf(e, sp)
	return f
}

func evidenceOf(e *env, sp span) Evidence {
	steps := [3]int{sp.start, sp.peak, sp.end}
	var ev Evidence
	for _, s := range e.rule.Evidence {
		x := e.set.Get(e.key, s)
		if x == nil {
			continue
		}
		v := EvidenceValue{Signal: s}
		for k, i := range steps {
			smp := Sample{Value: x.Values[i], Lower: math.NaN(), Upper: math.NaN()}
			if x.HasBounds() {
				smp.Lower, smp.Upper = x.Lower[i], x.Upper[i]
			}
			v.set(k, smp)
		}
		ev.Values = append(ev.Values, v)
	}
	for _, s := range e.rule.Baselines {
		q := isQuantile(s)
		b := e.baseline(s, q)
		v := EvidenceValue{Signal: s, Baseline: true}
		for k, i := range steps {
			smp := Sample{Value: b.value[e.baseStep(i)], Lower: math.NaN(), Upper: math.NaN()}
			if q {
				smp.Upper = b.upper[e.baseStep(i)]
			}
			v.set(k, smp)
		}
		ev.Values = append(ev.Values, v)
	}
	for _, p := range e.rule.Params {
		if p.Name != ForParam {
			ev.Thresholds = append(ev.Thresholds, p)
		}
	}
	for k, i := range steps {
		ev.Requests[k] = e.optional(series.RequestCount, i)
	}
	if e.rule.derived != nil {
		ev.Derived = e.rule.derived(e, sp)
	}
	return ev
}

func (v *EvidenceValue) set(k int, s Sample) {
	switch k {
	case 0:
		v.Start = s
	case 1:
		v.Peak = s
	default:
		v.End = s
	}
}

func isQuantile(s series.Signal) bool {
	n := string(s)
	return strings.HasSuffix(n, "_p50") || strings.HasSuffix(n, "_p90") || strings.HasSuffix(n, "_p99")
}

// settle relates the findings to each other: symptoms secondary to a specific cause, confidence
// (which counts corroboration), one headline per instance, and the texts.
func settle(fs []*Finding) []Finding {
	causes := map[*Finding]*Finding{}
	for _, f := range fs {
		if cause := explainer(f, fs); cause != nil {
			causes[f] = cause
		}
	}
	// A symptom names the cause at the end of the chain: prefill_bound explained by a
	// token_budget_starved that a decode_bound explains is secondary to decode_bound, the one
	// finding of the three that stays primary. The links form no cycle; the bound is a guard.
	for f, cause := range causes {
		for n := 0; causes[cause] != nil && n < len(fs); n++ {
			cause = causes[cause]
		}
		f.SecondaryTo = cause.Rule
		f.Severity = Info
	}
	for _, f := range fs {
		f.Confidence = confidence(f, fs)
	}
	best := map[string]*Finding{}
	for _, f := range fs {
		b := best[f.Key.Instance]
		if b == nil || outranks(f, b) {
			best[f.Key.Instance] = f
		}
	}
	for _, f := range best {
		f.Headline = true
	}
	order := ruleOrder()
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case !a.Start.Equal(b.Start):
			return a.Start.Before(b.Start)
		case a.Key.Instance != b.Key.Instance:
			return a.Key.Instance < b.Key.Instance
		case a.Key.Model != b.Key.Model:
			return a.Key.Model < b.Key.Model
		}
		return order[a.Rule] < order[b.Rule]
	})
	out := make([]Finding, len(fs))
	for i, f := range fs {
		f.Title = f.title + " on instance " + f.Key.Instance
		f.Text = text(f)
		out[i] = *f
	}
	return out
}

// explainer returns the specific cause that makes a symptom secondary: a finding of one of the
// causes that produce it, on the same instance, overlapping it in time; the first in headline
// order, then the earliest.
func explainer(f *Finding, fs []*Finding) *Finding {
	var best *Finding
	for _, c := range causes[f.Rule] {
		for _, g := range fs {
			if g.Rule != c || g.Key.Instance != f.Key.Instance || !overlap(f, g) {
				continue
			}
			if best == nil || HeadlineRank(g.Rule) < HeadlineRank(best.Rule) || (g.Rule == best.Rule && g.Start.Before(best.Start)) {
				best = g
			}
		}
	}
	return best
}

func overlap(a, b *Finding) bool { return !a.End.Before(b.Start) && !b.End.Before(a.Start) }

// outranks orders an instance's findings for its headline: primary before secondary, then the
// headline order of rules, then the longer, then the earlier.
func outranks(a, b *Finding) bool {
	if (a.SecondaryTo == "") != (b.SecondaryTo == "") {
		return a.SecondaryTo == ""
	}
	if ra, rb := HeadlineRank(a.Rule), HeadlineRank(b.Rule); ra != rb {
		return ra < rb
	}
	if da, db := a.End.Sub(a.Start), b.End.Sub(b.Start); da != db {
		return da > db
	}
	return a.Start.Before(b.Start)
}

// confidence grades a finding on four criteria: the margin past its threshold at the peak, how
// long it lasted against `for`, whether its data were complete (no unknown step and, for
// quantile rules, plenty of requests per window), and corroboration by a related finding (a
// cause and a symptom it produces) on the same instance at the same time.
func confidence(f *Finding, fs []*Finding) Confidence {
	margin := Criterion{Name: "margin", Met: f.margin >= strongMargin}
	if math.IsInf(f.margin, 1) {
		margin.Detail = "held past every threshold"
	} else {
		margin.Detail = fmt.Sprintf("%.0f%% past the tightest threshold at the peak (strong from %.0f%%)", 100*f.margin, 100*strongMargin)
	}
	lasted := f.End.Sub(f.Start)
	dur := Criterion{Name: "duration", Met: lasted >= longRun*f.forDur,
		Detail: fmt.Sprintf("lasted %s, `for` is %s (strong from %d×)", duration(lasted), duration(f.forDur), longRun)}
	data := Criterion{Name: "data", Met: f.gaps == 0}
	data.Detail = fmt.Sprintf("%d steps without data", f.gaps)
	if f.quant {
		enough := float64(manyRequests * f.minReqs)
		data.Met = data.Met && f.minReq >= enough
		data.Detail += fmt.Sprintf(", at least %s requests per window (strong from %s)", num(f.minReq), num(enough))
	}
	corr := Criterion{Name: "corroboration", Detail: "no related finding on the instance"}
	for _, g := range fs {
		if g != f && g.Key.Instance == f.Key.Instance && related(f.Rule, g.Rule) && overlap(f, g) {
			corr.Met, corr.Detail = true, "corroborated by "+g.Rule
			break
		}
	}
	c := Confidence{Criteria: []Criterion{margin, dur, data, corr}}
	met := 0
	for _, k := range c.Criteria {
		if k.Met {
			met++
		}
	}
	switch {
	case met >= 3:
		c.Level = "high"
	case met == 2:
		c.Level = "medium"
	default:
		c.Level = "low"
	}
	return c
}
