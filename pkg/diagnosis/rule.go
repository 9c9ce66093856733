package diagnosis

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Severity ranks a finding: critical, warning or info.
type Severity string

// The severities, most severe first.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Rank orders severities: the most severe is the highest.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Kind says what a threshold parameter measures, and so which values are valid.
type Kind int

// The parameter kinds.
const (
	// Fraction is a share between 0 and 1 (KV usage, hit rate, acceptance rate).
	Fraction Kind = iota
	// Factor is a ratio threshold (p99/p50, growth over the baseline): greater than 0.
	Factor
	// Rate is events per second or per minute: 0 or more.
	Rate
	// Seconds is a duration or latency in seconds: 0 or more.
	Seconds
)

func (k Kind) check(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%v is not a finite number", v)
	}
	switch k {
	case Fraction:
		if v < 0 || v > 1 {
			return fmt.Errorf("%s is out of range: it is a fraction, between 0 and 1", num(v))
		}
	case Factor:
		if v <= 0 {
			return fmt.Errorf("%s is out of range: it is a ratio, greater than 0", num(v))
		}
	case Rate:
		if v < 0 {
			return fmt.Errorf("%s is out of range: it is a rate, 0 or more", num(v))
		}
	case Seconds:
		if v < 0 {
			return fmt.Errorf("%s is out of range: it is a duration in seconds, 0 or more", num(v))
		}
	}
	return nil
}

// Param is a named threshold of a rule: its default, the value in force (the default unless the
// data source settings override it), its unit and what it means.
type Param struct {
	Name        string
	Value       float64
	Default     float64
	Unit        string
	Description string
	Kind        Kind
}

// ForParam is the parameter every rule has: its `for` duration in seconds.
const ForParam = "for"

// Rule is one row of the symptom-to-cause matrix: everything the evaluation, the findings'
// relations and the explanations need of it. Its simulator scenario is the pkg/sim scenario
// named by its id (the end-to-end tests join the two).
type Rule struct {
	ID string
	// Title names the problem ("KV cache saturated"); findings add "on instance X".
	Title   string
	Symptom string
	// Condition is the condition in words, with the thresholds in force.
	Condition string
	For       time.Duration
	// Severity is the rule's severity; Escalation, when set, raises it while a stricter threshold
	// also holds (spec_decode_inefficient is critical below 0.5).
	Severity   Severity
	Escalation *Escalation
	Cause      string
	Action     string
	// Promise is the signal the action moves once applied, and which way: what a verdict on
	// the change checks (the verdict query's rule).
	Promise series.Promise
	// Evidence are the signals a finding shows at its start, peak and end.
	Evidence []series.Signal
	// Params are the thresholds, "for" last.
	Params []Param

	// Required signals: without them the rule is not applicable. Optional ones refine it.
	Required []series.Signal
	Optional []series.Signal
	// Quantile rules compare histogram quantiles and need RequestCount ≥ MinRequests.
	Quantile bool
	// Baselines are the signals compared with their own value over the hour before.
	Baselines []series.Signal

	condition string // with {param} placeholders
	// summary states the values at a step in words, for a finding's text.
	summary func(e *env, i int) string
	eval    func(e *env, i int) outcome
	// applicable returns why the rule does not apply to a key, or "".
	applicable func(e *env) string
	// derived states, for a finding's evidence, what the condition computed from its signals
	// before comparing (prefix_cache_miss's recompute discount); nil: it compares them as they are.
	derived func(e *env, sp span) string
	// refine may replace a finding's cause and action with a more specific reading of the data.
	refine func(e *env, r span) (variant, cause, action string)
	// recommend computes the value the action should set, or says why there is none.
	recommend recommender

	// rank orders an instance's findings for its headline, lowest first (matrix.go says how
	// ranks are chosen).
	rank int
	// explains names the rules whose symptom this rule's mechanism produces, explainedBy the
	// rules whose mechanism produces this rule's symptom: while one of its causes fires on the
	// same instance, a finding is secondary to it (specific causes outrank symptoms). A link is
	// declared once, on either side, so that a new rule declares all of its own links; a rule in
	// no link says why in standsAlone.
	explains, explainedBy []string
	standsAlone           string
	// lengthens ranks the rule among the causes of each request stage its mechanism lengthens
	// (StageQueue, StagePrefill, StageDecode), lowest first: explaining a request, pkg/correlate
	// names the first such cause active during it.
	lengthens map[string]int
}

// Escalation raises a rule's severity while a stricter threshold (Param, which must not exceed
// the rule's own threshold Base) also holds.
type Escalation struct {
	Severity Severity
	Param    string
	Base     string
}

// Param returns the value in force of a parameter, NaN for an unknown name.
func (r Rule) Param(name string) float64 {
	for _, p := range r.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return math.NaN()
}

// Severities are the levels a rule can report, lowest first.
func (r Rule) Severities() []Severity {
	if r.Escalation == nil {
		return []Severity{r.Severity}
	}
	return []Severity{r.Severity, r.Escalation.Severity}
}

// Signals are every signal the rule reads: required, optional, evidence and, for quantile rules,
// the request count.
func (r Rule) Signals() []series.Signal {
	var out []series.Signal
	seen := map[series.Signal]bool{}
	add := func(list []series.Signal) {
		for _, s := range list {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	add(r.Required)
	add(r.Optional)
	add(r.Evidence)
	add(r.recommend.reads)
	if r.Quantile {
		add([]series.Signal{series.RequestCount})
	}
	return out
}

// withThresholds returns a copy of r with overrides applied to its parameters, its For and its
// condition text.
func (r Rule) withThresholds(over map[string]float64) Rule {
	params := make([]Param, len(r.Params))
	copy(params, r.Params)
	pairs := make([]string, 0, 2*len(params))
	for i := range params {
		params[i].Value = params[i].Default
		if v, ok := over[params[i].Name]; ok {
			params[i].Value = v
		}
		pairs = append(pairs, "{"+params[i].Name+"}", num(params[i].Value))
	}
	r.Params = params
	r.For = time.Duration(r.Param(ForParam) * float64(time.Second))
	r.Condition = strings.NewReplacer(pairs...).Replace(r.condition)
	r.Evidence = append([]series.Signal(nil), r.Evidence...)
	return r
}

// num prints a threshold or value compactly (0.85, 2, 0.005).
func num(v float64) string { return series.Format("%.4g", v) }

// duration prints a duration the way Prometheus rule files write it (5m, 90s, 1h30m).
func duration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			d -= n * u.d
		}
	}
	return b.String()
}
