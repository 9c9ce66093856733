package signals

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
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
// A regular expression that matches every value, such as the `.*` a dashboard variable's "All"
// sends, reads as the empty filter: All, so that a query treats it as it treats no filter.
func ParseMatch(what, v string) (Match, error) {
	if v == "" || matchesEverything(v) {
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

// matchesEverything reports whether the regular expression v matches every value (a label value
// holds no newline): `.*`, or such a star in a group or among alternatives (`(.*)`, `.*|a`).
func matchesEverything(v string) bool {
	re, err := syntax.Parse(v, syntax.Perl)
	if err != nil {
		return false
	}
	var all func(*syntax.Regexp) bool
	all = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpStar:
			return re.Sub[0].Op == syntax.OpAnyChar || re.Sub[0].Op == syntax.OpAnyCharNotNL
		case syntax.OpCapture:
			return all(re.Sub[0])
		case syntax.OpAlternate:
			return slices.ContainsFunc(re.Sub, all)
		}
		return false
	}
	return all(re.Simplify())
}

// All reports whether the filter is empty: every value passes.
func (m Match) All() bool { return m.re == nil }

// Matches reports whether v passes the filter.
func (m Match) Matches(v string) bool { return m.re == nil || m.re.MatchString(v) }

// Exact returns the value when it has no regular-expression syntax but dots (which match
// themselves too), so that it names the one value to look for even when nothing can be listed
// to match it against.
func (m Match) Exact() (string, bool) { return m.exact, m.exact != "" }
