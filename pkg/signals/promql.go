package signals

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
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
	Matchers []string
	// Instance and Model are exact values or regular expressions; empty means all.
	Instance string
	Model    string
}

// ParseMatchers validates a selector such as {job="vllm",namespace=~"inference-.*"} with the
// PromQL parser and returns its matchers in PromQL form.
func ParseMatchers(selector string) ([]string, error) {
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
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			return nil, fmt.Errorf("label matchers %q must not select a metric name: the plugin chooses vLLM's names", selector)
		}
		out = append(out, m.String())
	}
	return out, nil
}

// ValidLabelName reports whether s can be a Prometheus label name.
func ValidLabelName(s string) bool {
	return model.LegacyValidation.IsValidLabelName(s)
}

// matcher returns a regex matcher for a user's value, anchored as PromQL anchors regexes, and
// quoted so that no value can break out of the string.
func matcher(label, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	// Compiled alone too: anchored, a value such as `a") or vector(1) or ("` closes the group
	// and passes, and only Prometheus would reject it.
	if _, err := regexp.Compile(value); err != nil {
		return "", fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", label, value, err)
	}
	if _, err := regexp.Compile("^(?:" + value + ")$"); err != nil {
		return "", fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", label, value, err)
	}
	return label + "=~" + strconv.Quote(value), nil
}

// builder writes the PromQL of one query: its selector, window and grouping.
type builder struct {
	labels   Labels
	matchers []string // already validated, PromQL form
	window   string
}

func newBuilder(l Labels, f Filter, window time.Duration) (builder, error) {
	b := builder{labels: l, matchers: append([]string(nil), f.Matchers...), window: model.Duration(window).String()}
	for _, lv := range [][2]string{{l.Instance, f.Instance}, {l.Model, f.Model}} {
		m, err := matcher(lv[0], lv[1])
		if err != nil {
			return builder{}, err
		}
		if m != "" {
			b.matchers = append(b.matchers, m)
		}
	}
	return b, nil
}

func (b builder) by() string { return b.labels.Instance + ", " + b.labels.Model }

func (b builder) sel(metric string, extra ...string) string {
	ms := append(append([]string(nil), b.matchers...), extra...)
	return metric + "{" + strings.Join(ms, ", ") + "}"
}

func (b builder) sumRate(metric string, extra ...string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s[%s]))", b.by(), b.sel(metric, extra...), b.window)
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
