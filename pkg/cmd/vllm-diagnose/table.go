package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fatih/color"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// painter colours severities and states when the output is a terminal; otherwise it leaves the
// text as it is.
type painter struct{ on bool }

func (p painter) paint(s string) string {
	if !p.on {
		return s
	}
	var c *color.Color
	switch s {
	case "critical", "firing", "did not work":
		c = color.New(color.FgRed, color.Bold)
	case "warning", "pending":
		c = color.New(color.FgYellow)
	case "resolved", "worked":
		c = color.New(color.FgGreen)
	case "info":
		c = color.New(color.FgCyan)
	default:
		return s
	}
	c.EnableColor()
	return c.Sprint(s)
}

func newTable(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowMaxWidth(72),
	)
	t.Header(header)
	return t
}

// known are the findings frame's columns that the table shows in its own places, or leaves out
// as Grafana annotations' duplicates (title, text, tags). Any other column the plugin adds is
// shown after them.
var known = []string{"time", "timeEnd", "rule", "severity", "title", "text", "tags", "cause", "action", "evidence",
	"confidence", "instance", "model_name", "headline", "secondary_to"}

func extraColumns(findings []row) []string {
	seen := map[string]bool{}
	for _, f := range findings {
		for k := range f {
			if !slices.Contains(known, k) {
				seen[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func clock(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

func span(f row) string { return clock(str(f, "time")) + " → " + clock(str(f, "timeEnd")) }

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return fmt.Sprintf("%.4g", x)
	default:
		return fmt.Sprint(x)
	}
}

// writeDiagnosisTable prints the headline of each instance (worst first), every finding with
// its cause, action, evidence and confidence (headlines first), and each rule that could not
// be evaluated everywhere, once per rule and state.
func writeDiagnosisTable(w io.Writer, rep diagnosisReport, p painter) error {
	fmt.Fprintf(w, "vLLM diagnosis %s → %s: %d instance(s), %d finding(s), worst %s\n\n",
		clock(rep.Range.From), clock(rep.Range.To), len(rep.Instances), len(rep.Findings), p.paint(rep.WorstSeverity))
	headlines, others := headlinesFirst(rep.Findings)
	if len(headlines) > 0 {
		fmt.Fprintln(w, "Headline per instance (its likely bottleneck), worst first:")
		t := newTable(w, "instance", "model", "severity", "rule", "when", "confidence")
		for _, f := range headlines {
			if err := t.Append([]string{str(f, "instance"), str(f, "model_name"), p.paint(str(f, "severity")), str(f, "rule"), span(f), str(f, "confidence")}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "No finding in this range.")
	}
	extra := extraColumns(rep.Findings)
	for i, f := range append(headlines, others...) {
		if i == 0 {
			fmt.Fprintln(w, "\nFindings, headlines first:")
		}
		role := "headline"
		if h, _ := f["headline"].(bool); !h {
			role = "other"
			if s := str(f, "secondary_to"); s != "" {
				role = "secondary to " + s
			}
		}
		fmt.Fprintf(w, "\n%s %s on %s", p.paint(str(f, "severity")), str(f, "rule"), str(f, "instance"))
		if m := str(f, "model_name"); m != "" {
			fmt.Fprintf(w, " (%s)", m)
		}
		fmt.Fprintf(w, ", %s, %s\n", span(f), role)
		lines := [][2]string{{"cause", str(f, "cause")}, {"action", str(f, "action")}, {"evidence", str(f, "evidence")}, {"confidence", str(f, "confidence")}}
		for _, c := range extra {
			lines = append(lines, [2]string{c, text(f[c])})
		}
		for _, l := range lines {
			if l[1] != "" {
				fmt.Fprintf(w, "  %-11s %s\n", l[0]+":", l[1])
			}
		}
	}
	fmt.Fprintln(w)
	if len(rep.Rules) > 0 {
		fmt.Fprintln(w, "Rules not evaluated everywhere (once per rule and state):")
		t := newTable(w, "rule", "state", "instances", "steps", "why")
		for _, r := range rep.Rules {
			why := make([]string, len(r.Reasons))
			for i, t := range r.Reasons {
				why[i] = reasonText(t)
			}
			if len(why) == 0 {
				why = []string{"(the plugin gave no notice for it)"}
			}
			if err := t.Append([]string{r.Rule, strings.ReplaceAll(r.State, "_", " "), instancesText(r.Instances, len(rep.Instances)),
				fmt.Sprintf("%d of %d", r.Steps, r.Of), strings.Join(why, "; ")}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	writeNotices(w, otherNotices(rep))
	return nil
}

// reasonText is a rule notice without its opening (the rule, its state and the instances,
// which the table's other columns show): the reason after the first ": ".
func reasonText(notice string) string {
	if _, why, ok := strings.Cut(notice, ": "); ok {
		return why
	}
	return notice
}

func instancesText(keys []instanceKey, total int) string {
	if len(keys) == total && total > 3 {
		return fmt.Sprintf("all %d", total)
	}
	names := make([]string, 0, 3)
	for i, k := range keys {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(keys)-3))
			break
		}
		names = append(names, k.Instance)
	}
	return strings.Join(names, ", ")
}

// otherNotices are the notices that the rules table does not already show.
func otherNotices(rep diagnosisReport) []notice {
	shown := map[string]bool{}
	for _, r := range rep.Rules {
		for _, t := range r.Reasons {
			shown[t] = true
		}
	}
	var out []notice
	for _, n := range rep.Notices {
		if !shown[n.Text] {
			out = append(out, n)
		}
	}
	return out
}

func writeNotices(w io.Writer, ns []notice) {
	if len(ns) == 0 {
		return
	}
	fmt.Fprintln(w, "Notices:")
	for _, n := range ns {
		fmt.Fprintf(w, "  [%s] %s\n", n.Severity, n.Text)
	}
}
