package signals

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// FuzzMatcher: a filter value becomes exactly one regex matcher whose value is the value as
// sent, or an error; the selector written around it parses back to that matcher alone.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{`10.0.0.1:8000`, `a"} or vector(1) #`, `\`, `.*"}) or vector(1) or ({a="`, "a\nb", "модель"} {
		f.Add(s)
	}
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, value string) {
		b, err := newBuilder(DefaultLabels, Filter{Instance: value}, 0)
		if err != nil || value == "" {
			return
		}
		sel := b.sel("vllm:num_requests_running")
		ms, err := p.ParseMetricSelector(sel)
		if err != nil {
			t.Fatalf("selector %s does not parse: %v", sel, err)
		}
		var got []*labels.Matcher
		for _, m := range ms {
			if m.Name != labels.MetricName {
				got = append(got, m)
			}
		}
		if len(ms) != 2 || len(got) != 1 || got[0].Name != "instance" || got[0].Type != labels.MatchRegexp || got[0].Value != value {
			t.Errorf("value %q became matchers %v", value, ms)
		}
	})
}
