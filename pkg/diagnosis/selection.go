package diagnosis

import "fmt"

// Selection is what a findings answer keeps of an evaluation's findings: each instance's
// headline finding only, and the findings of the given severities only (empty keeps every
// severity). The zero value keeps all.
type Selection struct {
	HeadlineOnly bool
	Severities   []string
}

// Validate fails on a severity that is not one of Critical, Warning, Info, so that a query
// asking for one fails before anything is fetched.
func (s Selection) Validate() error {
	for _, sev := range s.Severities {
		switch Severity(sev) {
		case Critical, Warning, Info:
		default:
			return fmt.Errorf("severity %q is not one of critical, warning, info", sev)
		}
	}
	return nil
}

// Keep returns the findings the selection keeps, in their order, in a new slice (nil when it
// keeps none): the findings given may be shared with other queries.
func (s Selection) Keep(findings []Finding) []Finding {
	sevs := make(map[Severity]bool, len(s.Severities))
	for _, sev := range s.Severities {
		sevs[Severity(sev)] = true
	}
	var out []Finding
	for _, f := range findings {
		if (!s.HeadlineOnly || f.Headline) && (len(sevs) == 0 || sevs[f.Severity]) {
			out = append(out, f)
		}
	}
	return out
}
