package signals

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// FuzzMatcher: a filter value becomes exactly one regex matcher whose value is the value as
// sent, or an error; it never changes the selector around it.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{`10.0.0.1:8000`, `a"} or vector(1) #`, `\`, `.*"}) or vector(1) or ({a="`, "a\nb", "модель"} {
		f.Add(s)
	}
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, value string) {
		m, err := matcher("instance", value)
		if err != nil || m == "" {
			return
		}
		ms, err := p.ParseMetricSelector("vllm:num_requests_running{" + m + "}")
		if err != nil {
			t.Fatalf("matcher %s does not parse: %v", m, err)
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
