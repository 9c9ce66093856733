package signals

import (
	"fmt"
	"regexp"
	"strings"
)

// Match is a query's instance or model filter read as the metrics read it: empty matches every
// value; anything else is a regular expression anchored as PromQL anchors `=~`, so an exact
// value such as "10.0.0.1:8000" matches itself (Grafana interpolates a multi-value template
// variable as one such expression). The requests query matches span and series values with
// it, so that they pass exactly where the PromQL matcher of the same value passes.
type Match struct {
	re    *regexp.Regexp
	exact string
}

// ParseMatch reads a filter value; what names the filter in the error ("instance", "model").
func ParseMatch(what, v string) (Match, error) {
	if v == "" {
		return Match{}, nil
	}
	// Compiled alone too: anchored, an unbalanced ")" closes the group and passes.
	_, err := regexp.Compile(v)
	re, anchoredErr := regexp.Compile("^(?:" + v + ")$")
	if err == nil {
		err = anchoredErr
	}
	if err != nil {
		return Match{}, fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", what, v, err)
	}
	m := Match{re: re}
	if !strings.ContainsAny(v, `\^$*+?()[]{}|`) {
		m.exact = v
	}
	return m, nil
}

// All reports whether the filter is empty: every value passes.
func (m Match) All() bool { return m.re == nil }

// Matches reports whether v passes the filter.
func (m Match) Matches(v string) bool { return m.re == nil || m.re.MatchString(v) }

// Exact returns the value when it has no regular-expression syntax but dots (which match
// themselves too), so that it names the one value to look for even when nothing can be listed
// to match it against.
func (m Match) Exact() (string, bool) { return m.exact, m.exact != "" }
