package signals

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Labels names the Prometheus labels that identify a vLLM instance and model.
type Labels struct {
	Instance string
	Model    string
}

// DefaultLabels are Prometheus's and vLLM's own names.
var DefaultLabels = Labels{Instance: model.InstanceLabel, Model: vllm.LabelModelName}

// Filter selects the vLLM series of a query.
type Filter struct {
	// Matchers are extra matchers from the data source settings, such as job="vllm".
	Matchers []*labels.Matcher
	// Instance and Model are exact values or regular expressions; empty means all.
	Instance string
	Model    string
}

// ParseMatchers validates a selector such as {job="vllm",namespace=~"inference-.*"} with the
// PromQL parser and returns its matchers.
func ParseMatchers(selector string) ([]*labels.Matcher, error) {
	selector = strings.TrimSpace(selector)
	if selector == "" {
		return nil, nil
	}
	if !strings.HasPrefix(selector, "{") {
		selector = "{" + selector + "}"
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(selector)
	if err != nil {
		return nil, fmt.Errorf("label matchers %q are not a valid PromQL selector: %w", selector, err)
	}
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			return nil, fmt.Errorf("label matchers %q must not select a metric name: the plugin chooses vLLM's names", selector)
		}
	}
	return ms, nil
}

// ValidLabelName reports whether s can be a Prometheus label name.
func ValidLabelName(s string) bool {
	return model.LegacyValidation.IsValidLabelName(s)
}

// matcher returns a regex matcher for a user's value, anchored as PromQL anchors regexes; nil
// for an empty value (all). It is a labels.Matcher, printed by the parser's own String(), so
// no value can break out of its quoted string.
func matcher(label, value string) (*labels.Matcher, error) {
	if value == "" {
		return nil, nil
	}
	// Compiled alone too: anchored, a value such as `a") or vector(1) or ("` closes the group
	// and compiles, though it is no regular expression a user meant.
	if _, err := regexp.Compile(value); err != nil {
		return nil, fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", label, value, err)
	}
	m, err := labels.NewMatcher(labels.MatchRegexp, label, value)
	if err != nil {
		return nil, fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", label, value, err)
	}
	return m, nil
}

// is is the matcher label="value", for the fixed values the catalog selects (reason="capacity").
func is(label, value string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, label, value)
}

// builder writes the PromQL of one query: its selector, window and grouping. Selectors are the
// PromQL parser's AST nodes, written by their String(), and durations model.Durations.
type builder struct {
	labels   Labels
	matchers []*labels.Matcher // already validated
	window   time.Duration
}

func newBuilder(l Labels, f Filter, window time.Duration) (builder, error) {
	b := builder{labels: l, matchers: slices.Clone(f.Matchers), window: window}
	for _, lv := range [][2]string{{l.Instance, f.Instance}, {l.Model, f.Model}} {
		m, err := matcher(lv[0], lv[1])
		if err != nil {
			return builder{}, err
		}
		if m != nil {
			b.matchers = append(b.matchers, m)
		}
	}
	return b, nil
}

func (b builder) by() string { return b.labels.Instance + ", " + b.labels.Model }

// vector is the selector of metric with the builder's matchers and extra ones.
func (b builder) vector(metric string, extra ...*labels.Matcher) *parser.VectorSelector {
	return &parser.VectorSelector{Name: metric, LabelMatchers: append(slices.Clone(b.matchers), extra...)}
}

// sel writes metric's instant selector: vllm:num_requests_running{instance=~"a",job="vllm"}.
func (b builder) sel(metric string, extra ...*labels.Matcher) string {
	return b.vector(metric, extra...).String()
}

// over writes metric's range selector over the rate window: metric{...}[1m].
func (b builder) over(metric string, extra ...*labels.Matcher) string {
	return b.rangeSel(metric, b.window, extra...)
}

// rangeSel writes metric's range selector over d.
func (b builder) rangeSel(metric string, d time.Duration, extra ...*labels.Matcher) string {
	return (&parser.MatrixSelector{VectorSelector: b.vector(metric, extra...), Range: d}).String()
}

// offset writes metric's instant selector one rate window back: metric{...} offset 1m.
func (b builder) offset(metric string) string {
	v := b.vector(metric)
	v.OriginalOffset = b.window
	return v.String()
}

func (b builder) sumRate(metric string, extra ...*labels.Matcher) string {
	return fmt.Sprintf("sum by (%s) (rate(%s))", b.by(), b.over(metric, extra...))
}

// Window returns the rate window for a step: at least four scrape intervals, so that every
// window holds enough samples for rate, and at least the step, so that no sample is skipped.
func Window(scrape, step time.Duration) time.Duration {
	w := 4 * scrape
	if step > w {
		w = step
	}
	return w.Round(time.Second)
}
