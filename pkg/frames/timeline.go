package frames

import (
	"fmt"
	"sort"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// ReadableRows is how many rows a state timeline panel draws legibly (at least 20 px each) at
// its provisioned height: the dashboards size their timeline panels for it. Past it, the
// timeline drops instances, quietest first.
const ReadableRows = 20

// TimelineRows says which rule rows a timeline draws below each instance's headline row.
type TimelineRows int

const (
	// HeadlineRows is one row per instance, its headline state; when the range holds one
	// instance, a row for every rule follows.
	HeadlineRows TimelineRows = iota
	// EventfulRules adds, below each instance, a row for each rule that was pending or firing
	// on it in the range (every rule when the range holds one instance).
	EventfulRules
	// EveryRule is a row for every rule of every instance, quiet ones included; no instance
	// is dropped.
	EveryRule
)

// stateColors colour the timeline's rule states the way Grafana's alert list does.
var stateColors = data.ValueMapper{
	diagnosis.OK.String():               {Text: "ok", Color: "green", Index: 0},
	diagnosis.Pending.String():          {Text: "pending", Color: "yellow", Index: 1},
	diagnosis.Firing.String():           {Text: "firing", Color: "red", Index: 2},
	diagnosis.InsufficientData.String(): {Text: "insufficient data", Color: "text", Index: 3},
	diagnosis.NotApplicable.String():    {Text: "not applicable", Color: "transparent", Index: 4},
}

// SeverityColors are the colours of a finding's severity, shared by the timeline's headline
// rows and the fleet table; "ok" is an instance without a finding.
var SeverityColors = map[string]string{
	string(diagnosis.Critical): "red",
	string(diagnosis.Warning):  "orange",
	string(diagnosis.Info):     "blue",
	"pending":                  "yellow",
	"ok":                       "green",
}

// HeadlineValue is a headline row's value at a step where a rule fires or is pending: the
// state (a severity, or "pending") and the rule, so that one value mapping gives both the
// colour and the rule's name as the text.
func HeadlineValue(state, rule string) string { return state + "/" + rule }

// headlineMappings map every value a headline row can take: the rule states, and each rule at
// each severity and pending, shown as the rule's name in the severity's colour.
func headlineMappings(rules []diagnosis.Rule) data.ValueMappings {
	m := data.ValueMapper{}
	for k, v := range stateColors {
		m[k] = v
	}
	i := len(m)
	for _, r := range rules {
		for _, st := range []string{string(diagnosis.Critical), string(diagnosis.Warning), string(diagnosis.Info), "pending"} {
			text := r.ID
			if st == "pending" {
				text += " (pending)"
			}
			m[HeadlineValue(st, r.ID)] = data.ValueMappingResult{Text: text, Color: SeverityColors[st], Index: i}
			i++
		}
	}
	return data.ValueMappings{m}
}

// Timeline is the `timeline` format for Grafana's state timeline panel: one frame per instance
// and model, worst first. Its first string field, `headline`, is the instance's state at each
// step: the most severe finding firing then (its severity and rule, see HeadlineValue), else a
// pending rule, else ok (or insufficient data / not applicable when no rule could tell); the
// row is labelled with the instance alone (and its model when the instance serves several),
// and the rule shows as the band's value. The rule fields that follow (states ok, pending,
// firing, insufficient_data, not_applicable) are the ones rows asks for. Unless rows is
// EveryRule, when more than ReadableRows rows would be drawn, instances are dropped, first those
// that were ok throughout, then the least severe, and a notice says how many: at 500 instances
// the panel shows the worst. The first frame carries every notice of the evaluation.
func Timeline(res diagnosis.Result, rows TimelineRows) data.Frames {
	times := gridTimes(res.Grid)
	models := map[string]int{}
	for _, tl := range res.Timelines {
		models[tl.Key.Instance]++
	}
	withRules := func([]diagnosis.State) bool { return false }
	switch {
	case rows == EveryRule || len(models) == 1:
		withRules = func([]diagnosis.State) bool { return true }
	case rows == EventfulRules:
		withRules = eventful
	}
	byKey := map[series.Key][]diagnosis.Finding{}
	for _, f := range res.Findings {
		byKey[f.Key] = append(byKey[f.Key], f)
	}
	mappings := headlineMappings(res.Rules)

	type row struct {
		frame *data.Frame
		worst int
	}
	all := make([]row, 0, len(res.Timelines))
	for _, tl := range res.Timelines {
		values, worst := headlineStates(tl, byKey[tl.Key], times, res.Grid.Step)
		label := tl.Key.Instance
		if models[tl.Key.Instance] > 1 {
			label = keyDisplay(tl.Key)
		}
		head := data.NewField("headline", KeyLabels(tl.Key), values)
		head.Config = &data.FieldConfig{DisplayNameFromDS: label, Mappings: mappings}
		frame := data.NewFrame("timeline "+keyName(tl.Key), data.NewField("time", nil, times), head)
		for _, rs := range tl.Rules {
			if !withRules(rs.States) {
				continue
			}
			states := make([]string, len(rs.States))
			for i, s := range rs.States {
				states[i] = s.String()
			}
			field := data.NewField(rs.Rule, KeyLabels(tl.Key), states)
			field.Config = &data.FieldConfig{DisplayNameFromDS: displayName(rs.Rule, tl.Key), Mappings: data.ValueMappings{stateColors}}
			frame.Fields = append(frame.Fields, field)
		}
		all = append(all, row{frame: frame, worst: worst})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].worst > all[j].worst })

	var out data.Frames
	drawn, quiet, lesser, full := 0, 0, 0, false
	for _, r := range all {
		n := len(r.frame.Fields) - 1
		// Once an instance does not fit, neither does any less severe one after it.
		full = full || (rows != EveryRule && len(out) > 0 && drawn+n > ReadableRows)
		if full {
			if r.worst < 0 {
				quiet++
			} else {
				lesser++
			}
			continue
		}
		out = append(out, r.frame)
		drawn += n
	}
	if len(out) == 0 {
		out = append(out, data.NewFrame("timeline"))
	}
	meta := &data.FrameMeta{Notices: notices(res.Notices, nil, "")}
	if quiet+lesser > 0 {
		meta.Notices = append([]data.Notice{{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf(
			"%d of %d instances are not drawn (%d ok throughout, %d with less severe findings than those drawn): the fleet table lists every instance; select one to see all its rules.",
			quiet+lesser, len(all), quiet, lesser)}}, meta.Notices...)
	}
	out[0].Meta = meta
	return out
}

// headlineStates is a key's headline value at each step, and the worst state it reached over
// the range as a rank (-1 when it was never pending or firing).
func headlineStates(tl diagnosis.Timeline, findings []diagnosis.Finding, times []time.Time, step time.Duration) ([]string, int) {
	out := make([]string, len(times))
	worst := -1
	for i, t := range times {
		best, bestRank := "", -1
		var ok, insufficient bool
		for _, rs := range tl.Rules {
			switch rs.States[i] {
			case diagnosis.Firing:
				sev := firingSeverity(findings, rs.Rule, t, step)
				if r := severityRank(sev); r > bestRank {
					best, bestRank = HeadlineValue(sev, rs.Rule), r
				}
			case diagnosis.Pending:
				if r := severityRank("pending"); r > bestRank {
					best, bestRank = HeadlineValue("pending", rs.Rule), r
				}
			case diagnosis.OK:
				ok = true
			case diagnosis.InsufficientData:
				insufficient = true
			}
		}
		switch {
		case best != "":
			out[i] = best
		case ok:
			out[i] = diagnosis.OK.String()
		case insufficient:
			out[i] = diagnosis.InsufficientData.String()
		default:
			out[i] = diagnosis.NotApplicable.String()
		}
		if bestRank > worst {
			worst = bestRank
		}
	}
	return out, worst
}

// firingSeverity is the severity of the rule's finding that covers the point at t, which
// stands for the steps in (t − step, t] (a secondary finding is info); the rule fires only
// inside one of its findings, so warning is only a fallback.
func firingSeverity(findings []diagnosis.Finding, rule string, t time.Time, step time.Duration) string {
	for _, f := range findings {
		if f.Rule == rule && !t.Before(f.Start) && f.End.After(t.Add(-step)) {
			return string(f.Severity)
		}
	}
	return string(diagnosis.Warning)
}

// severityRank orders headline states: pending below info, info below warning below critical;
// -1 for anything else.
func severityRank(s string) int {
	switch s {
	case "pending":
		return 0
	case string(diagnosis.Info):
		return 1
	case string(diagnosis.Warning):
		return 2
	case string(diagnosis.Critical):
		return 3
	}
	return -1
}

// eventful reports whether a rule was pending or firing at some step.
func eventful(states []diagnosis.State) bool {
	for _, s := range states {
		if s == diagnosis.Pending || s == diagnosis.Firing {
			return true
		}
	}
	return false
}

// keyDisplay names a key instance first, as every display name of this data source does.
func keyDisplay(k series.Key) string {
	if k.Model == "" {
		return k.Instance
	}
	return k.Instance + " · " + k.Model
}
