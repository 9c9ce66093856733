package diagnosis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/internal/option"
	"github.com/seed/vllm-datasource/pkg/series"
)

// State is a rule's state for one key at one step, as the timeline shows it: a byte, since a
// fleet's timelines hold one for every rule, key and step.
type State uint8

// The states. Pending and firing follow Prometheus alerting rules; the last two are the steps
// where the condition is unknown.
const (
	OK State = iota
	Pending
	Firing
	InsufficientData
	NotApplicable
)

var stateNames = [...]string{OK: "ok", Pending: "pending", Firing: "firing", InsufficientData: "insufficient_data", NotApplicable: "not_applicable"}

// String is the state's name as frames and notices show it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// Options configures an evaluation.
type Options struct {
	// Rules are the rule ids to evaluate; empty means all.
	Rules      []string
	Thresholds Thresholds
	// MinRequests is the fewest requests in a rate window for a quantile to count (default 20).
	MinRequests int
	// Baseline is the window before each step that baselines are taken over (default 1h).
	Baseline time.Duration
	// EvalFrom is the first step reported; the grid's earlier steps only feed baselines and the
	// pending state. Zero means the grid's start.
	EvalFrom time.Time
	// Report, when set, is the grid that timelines and alert series are reported on (a panel's
	// step coarser than the set's, see EvalStep): each point shows the evaluated steps in
	// (point − Report.Step, point], the most severe state among them (firing, pending, ok,
	// insufficient_data, not_applicable), and an alert series is 1 when any of them holds.
	// Findings and notices keep the evaluation's resolution. Zero reports on the set's grid from
	// EvalFrom.
	Report series.Grid
	// TTFTObjectives are the time-to-first-token objectives of the data source's settings: the
	// tightest that applies to an instance's model sizes the admission control past_the_knee
	// advises.
	TTFTObjectives []TTFTObjective
}

// TTFTObjective is a time-to-first-token objective: its name, its threshold and the models it
// applies to.
type TTFTObjective struct {
	Name    string
	Seconds float64
	Applies func(model string) bool
}

// tightestTTFT is the objective with the lowest threshold that applies to model; zero when none.
func tightestTTFT(objectives []TTFTObjective, model string) TTFTObjective {
	var best TTFTObjective
	for _, o := range objectives {
		if o.Applies(model) && (best.Seconds == 0 || o.Seconds < best.Seconds) {
			best = o
		}
	}
	return best
}

// Defaults of Options.
const (
	DefaultMinRequests = series.MinRequests
	DefaultBaseline    = time.Hour
)

func (o Options) withDefaults() Options {
	o.MinRequests = option.PositiveOr(o.MinRequests, DefaultMinRequests)
	o.Baseline = option.PositiveOr(o.Baseline, DefaultBaseline)
	return o
}

// Result is an evaluation: findings, per-key state timelines, alert series and notices, all over
// the evaluated steps (Grid).
type Result struct {
	// Grid is the grid of Timelines and Alerts: Options.Report, or else the evaluated part of
	// the input grid, from EvalFrom to its end.
	Grid  series.Grid
	Rules []Rule
	// Findings are the firing intervals that reach into Grid, sorted by start, instance, model
	// and rule.
	Findings  []Finding
	Timelines []Timeline
	Alerts    []Alert
	Notices   []Notice
}

// Instances are the distinct instances the result evaluated, in the order of its timelines.
func (r Result) Instances() []string {
	var out []string
	seen := map[string]bool{}
	for _, tl := range r.Timelines {
		if !seen[tl.Key.Instance] {
			seen[tl.Key.Instance] = true
			out = append(out, tl.Key.Instance)
		}
	}
	return out
}

// Timeline is every evaluated rule's state per step for one key.
type Timeline struct {
	Key   series.Key
	Rules []RuleStates
}

// RuleStates is one rule's state at each step of Result.Grid.
type RuleStates struct {
	Rule   string
	States []State
}

// Alert is a rule's condition for one key at one severity, without `for` (a Grafana alert rule
// applies its own pending period): 1 at each step of Result.Grid where the condition holds at
// that severity or above, else 0. Unknown steps, and keys where the rule does not apply, are 0
// rather than missing, so that an alert rule on a fleet does not go to NoData for an instance
// without speculative decoding; the notices say why.
type Alert struct {
	Rule     string
	Severity Severity
	Key      series.Key
	Values   []float64
}

// Notice reports why a rule could not be evaluated on some keys or steps.
type Notice struct {
	Rule   string
	State  State // InsufficientData or NotApplicable
	Reason string
	Keys   []series.Key
	// Steps is how many steps (over all Keys) had this reason, of Of evaluated.
	Steps, Of int
}

// Text is the notice as a user reads it.
func (n Notice) Text() string {
	keys := make([]string, len(n.Keys))
	for i, k := range n.Keys {
		keys[i] = keyText(k)
	}
	on := strings.Join(keys, ", ")
	if n.State == NotApplicable {
		return fmt.Sprintf("%s is not applicable on %s: %s", n.Rule, on, n.Reason)
	}
	return fmt.Sprintf("%s has insufficient data on %s at %d of %d steps: %s", n.Rule, on, n.Steps, n.Of, n.Reason)
}

// span is one run of a condition: the steps from its first true step to its last, the step of
// the largest margin, and when it fired.
type span struct {
	start, end, peak, firedAt int
	fired, active             bool
}

// Evaluate runs the rules over a set. Errors are the caller's: unknown rule ids, invalid
// thresholds.
func Evaluate(set *series.Set, opts Options) (Result, error) {
	rules, err := Rules(opts.Rules, opts.Thresholds)
	if err != nil {
		return Result{}, err
	}
	opts = opts.withDefaults()
	g := set.Grid
	from := 0
	if !opts.EvalFrom.IsZero() && g.Len > 0 && g.Step > 0 {
		for from < g.Len && g.Time(from).Before(opts.EvalFrom) {
			from++
		}
	}
	res := Result{Grid: series.Grid{Start: g.Time(from), Step: g.Step, Len: g.Len - from}, Rules: rules}
	rep := opts.Report
	fold := rep.Step > 0 && rep.Len > 0 && !(rep.Step == g.Step && rep.Len == res.Grid.Len && rep.Start.Equal(res.Grid.Start))
	if fold {
		res.Grid = opts.Report
	}
	baseSteps := 0
	if g.Step > 0 {
		baseSteps = int(opts.Baseline / g.Step)
	}
	notes := noticeSet{}
	var findings []*Finding
	for _, key := range set.Keys() {
		tl := Timeline{Key: key}
		baselines := map[baseKey]*baselineSeries{}
		for ri := range rules {
			r := &rules[ri]
			e := &env{set: set, key: key, rule: r, minRequests: float64(opts.MinRequests),
				baseSteps: baseSteps, baseLabel: duration(opts.Baseline), baselines: baselines, anchor: -1,
				ttft: tightestTTFT(opts.TTFTObjectives, key.Model)}
			states, outs, spans := evaluateRule(e, g)
			if fold {
				tl.Rules = append(tl.Rules, RuleStates{Rule: r.ID, States: foldStates(states, g, opts.Report)})
			} else {
				tl.Rules = append(tl.Rules, RuleStates{Rule: r.ID, States: states[from:]})
			}
			for _, sev := range r.Severities() {
				if fold {
					a := alertSeries(r, sev, key, outs, g.Len, 0)
					a.Values = foldAlert(a.Values, g, opts.Report)
					res.Alerts = append(res.Alerts, a)
					continue
				}
				res.Alerts = append(res.Alerts, alertSeries(r, sev, key, outs, g.Len, from))
			}
			notes.add(r.ID, key, states[from:], outs, from)
			for _, sp := range spans {
				if sp.end >= from {
					findings = append(findings, newFinding(e, sp, outs, opts))
				}
			}
		}
		res.Timelines = append(res.Timelines, tl)
	}
	res.Findings = settle(findings)
	res.Notices = notes.list()
	return res, nil
}

// evaluateRule runs one rule over one key's grid like a Prometheus alerting rule: a true step
// starts or extends a run (pending), which fires once it has lasted `for`; a false step ends it.
// An unknown step neither fires nor clears: it is reported as such, and the run goes on if the
// condition holds again within `for`; a longer gap ends it, since nothing then shows the
// condition held throughout.
func evaluateRule(e *env, g series.Grid) (states []State, outs []outcome, spans []span) {
	r := e.rule
	states = make([]State, g.Len)
	outs = make([]outcome, g.Len)
	if why := notApplicable(e); why != "" {
		for i := range states {
			states[i] = NotApplicable
			outs[i] = outcome{v: unknown, reason: why}
		}
		return states, outs, nil
	}
	var cur *span
	end := func(active bool) {
		if cur != nil && cur.fired {
			cur.active = active
			spans = append(spans, *cur)
		}
		cur = nil
	}
	for i := 0; i < g.Len; i++ {
		e.anchor = -1
		if cur != nil && g.Time(i).Sub(g.Time(cur.end)) <= r.For+g.Step {
			e.anchor = cur.start
		}
		o := r.eval(e, i)
		outs[i] = o
		switch o.v {
		case holds:
			if cur != nil && g.Time(i).Sub(g.Time(cur.end)) > r.For+g.Step {
				end(false)
			}
			if cur == nil {
				cur = &span{start: i, peak: i}
			}
			cur.end = i
			if o.margin > outs[cur.peak].margin {
				cur.peak = i
			}
			if !cur.fired && g.Time(i).Sub(g.Time(cur.start)) >= r.For {
				cur.fired, cur.firedAt = true, i
			}
			states[i] = Pending
			if cur.fired {
				states[i] = Firing
			}
		case fails:
			end(false)
			states[i] = OK
		default:
			states[i] = InsufficientData
		}
	}
	if cur != nil {
		end(g.End().Sub(g.Time(cur.end)) <= r.For)
	}
	e.anchor = -1
	return states, outs, spans
}

// stateRank orders the states a reported point may show: the higher, the more telling.
var stateRank = [...]int{Firing: 4, Pending: 3, OK: 2, InsufficientData: 1, NotApplicable: 0}

// folded calls show(p, lo, hi) for each point p of the report grid with the evaluated steps
// [lo, hi) in (time − report step, time], or the last step before the point when none is.
func folded(g, report series.Grid, show func(p, lo, hi int)) {
	lo := 0
	for p := 0; p < report.Len; p++ {
		t := report.Time(p)
		for lo < g.Len && !g.Time(lo).After(t.Add(-report.Step)) {
			lo++
		}
		hi := lo
		for hi < g.Len && !g.Time(hi).After(t) {
			hi++
		}
		if hi == lo {
			i, ok := g.Index(t)
			if !ok {
				show(p, 0, 0)
				continue
			}
			show(p, i, i+1)
			continue
		}
		show(p, lo, hi)
	}
}

// foldStates reports states on the report grid: the most telling state among each point's steps.
func foldStates(states []State, g, report series.Grid) []State {
	out := make([]State, report.Len)
	folded(g, report, func(p, lo, hi int) {
		out[p] = InsufficientData
		for i := lo; i < hi; i++ {
			if i == lo || stateRank[states[i]] > stateRank[out[p]] {
				out[p] = states[i]
			}
		}
	})
	return out
}

// foldAlert reports an alert series on the report grid: 1 where any of a point's steps is 1.
func foldAlert(values []float64, g, report series.Grid) []float64 {
	out := make([]float64, report.Len)
	folded(g, report, func(p, lo, hi int) {
		for i := lo; i < hi; i++ {
			out[p] = max(out[p], values[i])
		}
	})
	return out
}

// notApplicable says why a rule cannot apply to a key: a required signal is absent (the reason
// comes from the set, such as speculative decoding off or a vLLM too old for a histogram), or
// the rule's own applicability check fails.
func notApplicable(e *env) string {
	req := e.rule.Required
	if e.rule.Quantile {
		req = append(append([]series.Signal(nil), req...), series.RequestCount)
	}
	for _, s := range req {
		if e.set.Get(e.key, s) != nil {
			continue
		}
		if why, ok := e.set.Absent[s]; ok && why != "" {
			return fmt.Sprintf("%s is unavailable: %s", s, why)
		}
		return fmt.Sprintf("%s has no series for this instance", s)
	}
	if e.rule.applicable != nil {
		return e.rule.applicable(e)
	}
	return ""
}

func alertSeries(r *Rule, sev Severity, key series.Key, outs []outcome, n, from int) Alert {
	a := Alert{Rule: r.ID, Severity: sev, Key: key, Values: make([]float64, n-from)}
	for i := from; i < n; i++ {
		if o := outs[i]; o.v == holds && o.severity.Rank() >= sev.Rank() {
			a.Values[i-from] = 1
		}
	}
	return a
}

// noticeSet gathers unknown steps by rule, state and reason, across keys.
type noticeSet map[noticeKey]*Notice

type noticeKey struct {
	rule   string
	state  State
	reason string
}

func (ns noticeSet) add(rule string, key series.Key, states []State, outs []outcome, from int) {
	counted := map[noticeKey]bool{}
	for i, st := range states {
		if st != InsufficientData && st != NotApplicable {
			continue
		}
		k := noticeKey{rule, st, outs[from+i].reason}
		n := ns[k]
		if n == nil {
			n = &Notice{Rule: rule, State: st, Reason: k.reason}
			ns[k] = n
		}
		if !counted[k] {
			counted[k] = true
			n.Keys = append(n.Keys, key)
			n.Of += len(states)
		}
		n.Steps++
	}
}

func (ns noticeSet) list() []Notice {
	out := make([]Notice, 0, len(ns))
	for _, n := range ns {
		out = append(out, *n)
	}
	order := ruleOrder()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rule != b.Rule {
			return order[a.Rule] < order[b.Rule]
		}
		if a.State != b.State {
			return a.State < b.State
		}
		return a.Reason < b.Reason
	})
	return out
}

func ruleOrder() map[string]int {
	m := map[string]int{}
	for i, r := range matrix {
		m[r.ID] = i
	}
	return m
}

func keyText(k series.Key) string {
	if k.Model == "" {
		return k.Instance
	}
	return k.Instance + " (" + k.Model + ")"
}
