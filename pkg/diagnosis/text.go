package diagnosis

import (
	"fmt"
	"math"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
)

// text is a finding as one paragraph: what, where, when, the values at the peak, cause, action.
// Times are UTC: the backend does not know the viewer's time zone.
func text(f *Finding) string {
	var b strings.Builder
	b.WriteString(f.Title)
	if f.Key.Model != "" {
		fmt.Fprintf(&b, " (model %s)", f.Key.Model)
	}
	layout := "15:04"
	if f.Start.UTC().YearDay() != f.End.UTC().YearDay() || f.Start.UTC().Year() != f.End.UTC().Year() {
		layout = "2006-01-02 15:04"
	}
	if f.Active {
		fmt.Fprintf(&b, " since %s UTC (still at %s)", f.Start.UTC().Format(layout), f.End.UTC().Format(layout))
	} else {
		fmt.Fprintf(&b, " from %s to %s UTC", f.Start.UTC().Format(layout), f.End.UTC().Format(layout))
	}
	fmt.Fprintf(&b, ": %s. Cause: %s. Action: %s.", f.summary, f.Cause, f.Action)
	if f.SecondaryTo != "" {
		fmt.Fprintf(&b, " Secondary to %s on the same instance, which produces this symptom.", f.SecondaryTo)
	}
	return b.String()
}

// String is the evidence in one line: each signal at start / peak / end (quantiles as their
// bucket), the thresholds, the request counts.
func (ev Evidence) String() string {
	var parts []string
	for _, v := range ev.Values {
		name := string(v.Signal)
		if v.Baseline {
			name = "baseline " + name
		}
		parts = append(parts, fmt.Sprintf("%s %s / %s / %s", name, v.Start, v.Peak, v.End))
	}
	if len(ev.Thresholds) > 0 {
		ths := make([]string, len(ev.Thresholds))
		for i, p := range ev.Thresholds {
			ths[i] = fmt.Sprintf("%s=%s %s", p.Name, num(p.Value), p.Unit)
		}
		parts = append(parts, "thresholds "+strings.Join(ths, ", "))
	}
	if !math.IsNaN(ev.Requests[1]) {
		parts = append(parts, fmt.Sprintf("requests per window %s / %s / %s", num(ev.Requests[0]), num(ev.Requests[1]), num(ev.Requests[2])))
	}
	out := "start / peak / end: " + strings.Join(parts, "; ")
	if ev.Derived != "" {
		out += "; at the peak, " + ev.Derived
	}
	return out
}

// String is a sample, with its bucket when it has one.
func (s Sample) String() string {
	if math.IsNaN(s.Lower) && math.IsNaN(s.Upper) {
		return num(s.Value)
	}
	return num(s.Value) + " in " + interval(s.Lower, s.Upper)
}

// String is the grade with the criteria it rests on.
func (c Confidence) String() string {
	parts := make([]string, len(c.Criteria))
	for i, k := range c.Criteria {
		mark := "no"
		if k.Met {
			mark = "yes"
		}
		parts[i] = fmt.Sprintf("%s %s (%s)", k.Name, mark, k.Detail)
	}
	return c.Level + ": " + strings.Join(parts, "; ")
}

// interval prints a histogram bucket (lo, hi].
func interval(lo, hi float64) string {
	switch {
	case math.IsNaN(lo) && !math.IsNaN(hi):
		return "≤ " + num(hi)
	case math.IsInf(hi, 1):
		return "> " + num(lo)
	case lo <= 0:
		return "≤ " + num(hi)
	}
	return "(" + num(lo) + ", " + num(hi) + "]"
}

// quantileText prints a quantile at step i as its bucket in seconds: "2.5–5 s", "> 10 s".
func quantileText(e *env, s series.Signal, i int) string {
	x := e.set.Get(e.key, s)
	if x == nil || math.IsNaN(x.Values[i]) {
		return series.Missing
	}
	if !x.HasBounds() {
		return seconds(x.Values[i])
	}
	return bucketText(x.Lower[i], x.Upper[i])
}

func baselineQuantileText(e *env, s series.Signal, i int) string {
	up := e.baseline(s, true).upper[e.baseStep(i)]
	if math.IsNaN(up) {
		return series.Missing
	}
	return "≤ " + seconds(up)
}

func bucketText(lo, hi float64) string {
	switch {
	case math.IsInf(hi, 1):
		return "> " + seconds(lo)
	case lo <= 0:
		return "≤ " + seconds(hi)
	}
	return fmt.Sprintf("%s–%s", num(lo), seconds(hi))
}

func seconds(v float64) string { return series.Format("%.4g s", v) }

func percent(v float64) string { return series.Format("%.0f%%", 100*v) }
