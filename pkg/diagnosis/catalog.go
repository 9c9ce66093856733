package diagnosis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// IDs returns every rule id in the matrix's order.
func IDs() []string {
	out := make([]string, len(matrix))
	for i, r := range matrix {
		out[i] = r.ID
	}
	return out
}

// Rules returns the rules with these ids (all of them when ids is empty), in the matrix's order,
// with the overrides of th in force. Unknown ids and invalid thresholds are errors.
func Rules(ids []string, th Thresholds) ([]Rule, error) {
	if err := th.Validate(); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	var unknown []string
	for _, id := range ids {
		if _, ok := ruleByID(id); !ok {
			unknown = append(unknown, fmt.Sprintf("%q%s", id, suggest(id, IDs())))
			continue
		}
		want[id] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown rule %s; the rules are %s", strings.Join(unknown, ", "), strings.Join(IDs(), ", "))
	}
	var out []Rule
	for _, r := range matrix {
		if len(want) == 0 || want[r.ID] {
			out = append(out, r.withThresholds(th[r.ID]))
		}
	}
	return out, nil
}

// RequiredSignals returns the signals a query must fetch to evaluate these rules (all when ids
// is empty), sorted by name: the conditions' signals, the evidence, and the request count of
// quantile rules.
func RequiredSignals(ids []string) ([]series.Signal, error) {
	rules, err := Rules(ids, nil)
	if err != nil {
		return nil, err
	}
	seen := map[series.Signal]bool{}
	var out []series.Signal
	for _, r := range rules {
		for _, s := range r.Signals() {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// RequiredHistograms returns the metric families whose buckets the rules' recommendations read
// whole (the tokens-per-step histogram bounds --max-num-batched-tokens), sorted.
func RequiredHistograms(ids []string) ([]string, error) {
	rules, err := Rules(ids, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rules {
		for _, h := range r.recommend.histograms {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Lookback is how long before the evaluated range the grid must start for the result at the
// range's first step to be right: a rule's `for` (so that a condition already pending or firing
// is seen), plus the baseline window for rules that compare with a baseline.
func Lookback(opts Options) (time.Duration, error) {
	rules, err := Rules(opts.Rules, opts.Thresholds)
	if err != nil {
		return 0, err
	}
	opts = opts.withDefaults()
	var d time.Duration
	for _, r := range rules {
		need := r.For
		if len(r.Baselines) > 0 {
			need += opts.Baseline
		}
		d = max(d, need)
	}
	return d, nil
}

// ShortestFor is the shortest positive `for` of the rules, 0 when none has one.
func ShortestFor(rules []Rule) time.Duration {
	var shortest time.Duration
	for _, r := range rules {
		if r.For > 0 && (shortest == 0 || r.For < shortest) {
			shortest = r.For
		}
	}
	return shortest
}

// MaxEvalPoints bounds the steps an evaluation takes over its range (see EvalStep): about the
// width of a wide panel, so that evaluating finer than a coarse panel costs at most that.
const MaxEvalPoints = 2000

// EvalStep is the step to evaluate the rules at for a panel whose step is step, over a range
// of span, with Prometheus scraping every scrape: the panel's step, unless a rule's `for` needs
// finer. Prometheus evaluates a rule every evaluation interval whatever a panel shows, and a
// rule fires only after its condition held at steps spanning `for`; at a 10-minute step a
// 12-minute fault fills one rate window, so a 5-minute `for` never sees two true steps. The
// evaluation step is therefore at most half the shortest `for` of the evaluated rules (the
// panel's step divided by a whole number, so that panel steps hold whole evaluation steps when
// the division is exact), never finer than the scrape interval, and never so fine that the range
// takes more than MaxEvalPoints steps: past that the findings follow the range's resolution,
// as they follow the panel's step today. Evaluate reports timelines and alert series at the
// panel's step (Options.Report).
func EvalStep(opts Options, step, scrape, span time.Duration) (time.Duration, error) {
	rules, err := Rules(opts.Rules, opts.Thresholds)
	if err != nil {
		return 0, err
	}
	shortest := ShortestFor(rules)
	if shortest == 0 || step <= shortest/2 {
		return step, nil
	}
	k := (step + shortest/2 - 1) / (shortest / 2)
	eval := (step / k).Truncate(time.Second)
	budget := span / MaxEvalPoints
	if r := budget % time.Second; r != 0 {
		budget += time.Second - r
	}
	eval = max(eval, scrape, budget)
	if eval >= step {
		return step, nil
	}
	return eval, nil
}

// CatalogEntry is one rule as the plugin's `GET rules` resource returns it, thresholds in force.
type CatalogEntry struct {
	ID         string          `json:"id"`
	Title      string          `json:"title"`
	Symptom    string          `json:"symptom"`
	Condition  string          `json:"condition"`
	Severity   Severity        `json:"severity"`
	Severities []Severity      `json:"severities"`
	For        string          `json:"for"`
	Cause      string          `json:"cause"`
	Action     string          `json:"action"`
	Evidence   []series.Signal `json:"evidence"`
	Thresholds []ThresholdInfo `json:"thresholds"`
}

// ThresholdInfo is a parameter in the catalog: the value in force and its default.
type ThresholdInfo struct {
	Name        string  `json:"name"`
	Value       float64 `json:"value"`
	Default     float64 `json:"default"`
	Unit        string  `json:"unit"`
	Description string  `json:"description"`
}

// Catalog describes every rule with the overrides of th in force.
func Catalog(th Thresholds) ([]CatalogEntry, error) {
	rules, err := Rules(nil, th)
	if err != nil {
		return nil, err
	}
	out := make([]CatalogEntry, len(rules))
	for i, r := range rules {
		ths := make([]ThresholdInfo, len(r.Params))
		for k, p := range r.Params {
			ths[k] = ThresholdInfo{Name: p.Name, Value: p.Value, Default: p.Default, Unit: p.Unit, Description: p.Description}
		}
		out[i] = CatalogEntry{
			ID: r.ID, Title: r.Title, Symptom: r.Symptom, Condition: r.Condition, Severity: r.Severity,
			Severities: r.Severities(), For: duration(r.For), Cause: r.Cause, Action: r.Action,
			Evidence: r.Evidence, Thresholds: ths,
		}
	}
	return out, nil
}
