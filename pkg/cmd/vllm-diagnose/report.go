package main

import (
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// schemaVersion is the version of the JSON output (schema/output.schema.json); fields may be
// added within a version, none renamed or removed.
const schemaVersion = "1"

// header opens every JSON answer: the schema's version and which answer it is (kind).
type header struct {
	SchemaVersion string `json:"schemaVersion"`
	Kind          string `json:"kind"`
}

func headerOf(kind string) header { return header{SchemaVersion: schemaVersion, Kind: kind} }

// Severities of findings, worst first.
var severityRank = map[string]int{"critical": 3, "warning": 2, "info": 1}

// timeRange is a range as the outputs show it.
type timeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func rangeOf(from, to time.Time) timeRange {
	return timeRange{From: from.UTC().Format(time.RFC3339), To: to.UTC().Format(time.RFC3339)}
}

// instanceKey is one instance and model the diagnosis evaluated.
type instanceKey struct {
	Instance string `json:"instance"`
	Model    string `json:"model_name"`
}

// ruleState is a rule that could not be evaluated everywhere, once per rule and state: where it
// did not apply or lacked data, and the plugin's notices that say why.
type ruleState struct {
	Rule      string        `json:"rule"`
	State     string        `json:"state"`
	Instances []instanceKey `json:"instances"`
	// Steps is how many evaluated steps, over those instances, were in this state, of Of.
	Steps   int      `json:"steps"`
	Of      int      `json:"of"`
	Reasons []string `json:"reasons"`
}

// diagnosisReport is the JSON output of a diagnosis run.
type diagnosisReport struct {
	header
	Range     timeRange     `json:"range"`
	Instances []instanceKey `json:"instances"`
	// Findings are the rows of the plugin's findings frame, in its order, every column by name.
	Findings      []row       `json:"findings"`
	Rules         []ruleState `json:"rules"`
	Notices       []notice    `json:"notices"`
	WorstSeverity string      `json:"worstSeverity"`
	ExitCode      int         `json:"exitCode"`
}

// Timeline states that make a rule "not evaluated" on a step (pkg/frames' timeline values).
const (
	stateInsufficient  = "insufficient_data"
	stateNotApplicable = "not_applicable"
)

// newDiagnosisReport reads the plugin's findings frame and its timeline frames (one per
// instance and model, one field per rule whose values are the rule's state at each step).
func newDiagnosisReport(findings *data.Frame, timeline data.Frames, from, to time.Time) diagnosisReport {
	rep := diagnosisReport{header: headerOf("diagnosis"), Range: rangeOf(from, to),
		Instances: []instanceKey{}, Findings: rows(findings), Rules: []ruleState{}}
	rep.Notices = noticesOf(data.Frames{findings})

	type acc struct {
		keys      []instanceKey
		steps, of int
	}
	states := map[string]map[string]*acc{}
	for _, f := range timeline {
		if len(f.Fields) < 2 {
			continue
		}
		var key instanceKey
		for _, fld := range f.Fields[1:] {
			if fld.Type() != data.FieldTypeString {
				continue
			}
			key = instanceKey{Instance: fld.Labels["instance"], Model: fld.Labels["model_name"]}
			counts := map[string]int{}
			for i := range fld.Len() {
				counts[fld.At(i).(string)]++
			}
			for _, st := range []string{stateNotApplicable, stateInsufficient} {
				if counts[st] == 0 {
					continue
				}
				if states[fld.Name] == nil {
					states[fld.Name] = map[string]*acc{}
				}
				a := states[fld.Name][st]
				if a == nil {
					a = &acc{}
					states[fld.Name][st] = a
				}
				a.keys = append(a.keys, key)
				a.steps += counts[st]
				a.of += fld.Len()
			}
		}
		rep.Instances = append(rep.Instances, key)
	}
	order := ruleOrder(timeline)
	for _, rule := range order {
		for _, st := range []string{stateNotApplicable, stateInsufficient} {
			a := states[rule][st]
			if a == nil {
				continue
			}
			rs := ruleState{Rule: rule, State: st, Instances: a.keys, Steps: a.steps, Of: a.of, Reasons: reasonsOf(rep.Notices, rule, st)}
			rep.Rules = append(rep.Rules, rs)
		}
	}
	rep.WorstSeverity, rep.ExitCode = verdictOf(rep.Findings)
	return rep
}

// ruleOrder is the rules in the order the timeline lists them: the matrix's order.
func ruleOrder(timeline data.Frames) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range timeline {
		for _, fld := range f.Fields {
			if fld.Type() == data.FieldTypeString && !seen[fld.Name] {
				seen[fld.Name] = true
				out = append(out, fld.Name)
			}
		}
	}
	return out
}

// reasonsOf picks the plugin's notices about a rule in a state. The timeline gives where and
// how often; only the notices' text says why, so they are matched by their opening words, the
// rule id followed by "is not applicable" or "has insufficient data".
func reasonsOf(ns []notice, rule, state string) []string {
	prefix := rule + " has insufficient data"
	if state == stateNotApplicable {
		prefix = rule + " is not applicable"
	}
	out := []string{}
	for _, n := range ns {
		if strings.HasPrefix(n.Text, prefix) {
			out = append(out, n.Text)
		}
	}
	return out
}

// verdictOf is the worst severity among the findings, and the exit code it gives. A secondary
// finding (info) does not fail a CI job: its cause, reported on its own, does.
func verdictOf(findings []row) (string, int) {
	worst := 0
	for _, f := range findings {
		worst = max(worst, severityRank[str(f, "severity")])
	}
	switch worst {
	case 3:
		return "critical", exitCritical
	case 2:
		return "warning", exitWarning
	case 1:
		return "info", exitOK
	}
	return "none", exitOK
}

// headlinesFirst orders findings for the table: each instance's headline, worst first, then the
// others, worst first; ties by start, instance and rule.
func headlinesFirst(findings []row) (headlines, others []row) {
	for _, f := range findings {
		if h, _ := f["headline"].(bool); h {
			headlines = append(headlines, f)
		} else {
			others = append(others, f)
		}
	}
	worstFirst := func(list []row) {
		sort.SliceStable(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if ra, rb := severityRank[str(a, "severity")], severityRank[str(b, "severity")]; ra != rb {
				return ra > rb
			}
			if str(a, "time") != str(b, "time") {
				return str(a, "time") < str(b, "time")
			}
			if str(a, "instance") != str(b, "instance") {
				return str(a, "instance") < str(b, "instance")
			}
			return str(a, "rule") < str(b, "rule")
		})
	}
	worstFirst(headlines)
	worstFirst(others)
	return headlines, others
}
