package frames

import (
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// Findings is the `diagnosis` query's default format: one row per finding, with the fields time,
// timeEnd, rule, severity (critical, warning, info), title, text, tags, cause, action, evidence,
// confidence, instance and model_name. The same frame serves as an annotation query result:
// Grafana maps time, timeEnd, title, text and tags (one comma-separated string, which its
// annotation mapping splits).
// headline and secondary_to are added: the instance's likely bottleneck, and the cause a
// symptom is secondary to; recommendation, the change to make in one sentence with its
// arithmetic (or which metric is missing), and the same advice as fields: flag, current (its
// value now as the metrics show it, null when unknown), current_source (where that comes from),
// change (raise, lower, or target when the current value is not known well enough) and
// recommended (null when there is no value, or when the computed one would not change the
// flag and the sentence says why); slo_misses, each service-level objective's misses while the
// finding was active, from the attribution of the objectives' misses (misses: slo.Attributions;
// empty without objectives). Notices say which rules had insufficient data or did not apply.
func Findings(res diagnosis.Result, misses []slo.AttributionRow) *data.Frame {
	n := len(res.Findings)
	var (
		start, end                          = make([]time.Time, n), make([]time.Time, n)
		rule, severity, title, text, tags   = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		cause, action, evidence, confidence = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		instance, model, secondary          = make([]string, n), make([]string, n), make([]string, n)
		headline                            = make([]bool, n)
		recommendation, flag, source, chg   = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		current, recommended                = make([]*float64, n), make([]*float64, n)
		sloMisses                           = make([]string, n)
	)
	for i, f := range res.Findings {
		start[i], end[i] = f.Start, f.End
		rule[i], severity[i], title[i], text[i] = f.Rule, string(f.Severity), f.Title, f.Text
		tags[i] = strings.Join(f.Tags(), ",")
		cause[i], action[i] = f.Cause, f.Action
		evidence[i] = f.Evidence.String() + "; confidence " + f.Confidence.String()
		confidence[i] = f.Confidence.Level
		instance[i], model[i], secondary[i], headline[i] = f.Key.Instance, f.Key.Model, f.SecondaryTo, f.Headline
		rec := f.Recommendation
		recommendation[i], flag[i], source[i] = rec.String(), rec.Flag, rec.CurrentSource
		if rec.Known() {
			recommended[i], chg[i] = &rec.Value, string(rec.Change)
		}
		if v := rec.Current.Value(); rec.Current.Known() {
			current[i] = &v
		}
		sloMisses[i] = missesText(slo.MissesOf(misses, f))
	}
	frame := data.NewFrame("findings",
		data.NewField("time", nil, start),
		data.NewField("timeEnd", nil, end),
		data.NewField("rule", nil, rule),
		data.NewField("severity", nil, severity),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
		data.NewField("cause", nil, cause),
		data.NewField("action", nil, action),
		data.NewField("evidence", nil, evidence),
		data.NewField("confidence", nil, confidence),
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		data.NewField("headline", nil, headline),
		data.NewField("secondary_to", nil, secondary),
		data.NewField("recommendation", nil, recommendation),
		data.NewField("flag", nil, flag),
		data.NewField("current", nil, current),
		data.NewField("current_source", nil, source),
		data.NewField("change", nil, chg),
		data.NewField("recommended", nil, recommended),
		data.NewField("slo_misses", nil, sloMisses),
	)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Notices: notices(res.Notices, nil, "")}
	return frame
}

// FindingsOfOneInstance is the findings frame of a query that draws one instance's findings
// (graph annotations) when the range holds n instances: no finding, and a notice saying why.
func FindingsOfOneInstance(res diagnosis.Result, n int) *data.Frame {
	res.Findings = nil
	frame := Findings(res, nil)
	frame.Meta.Notices = append([]data.Notice{{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf(
		"%d instances in range: findings are drawn on graphs for one instance only; select one, or read the fleet's findings in the table and the timeline.", n)}},
		frame.Meta.Notices...)
	return frame
}

// AlertSeries is the `alert` format for Grafana unified alerting: one numeric series per rule,
// severity and key (1 while the condition holds, else 0, without the rule's `for`), labelled
// rule, severity, instance and model_name, as dataplane time-series-multi frames. Each carries
// the notices of its rule and key.
func AlertSeries(res diagnosis.Result) data.Frames {
	times := gridTimes(res.Grid)
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	}
	out := make(data.Frames, 0, len(res.Alerts))
	for _, a := range res.Alerts {
		labels := KeyLabels(a.Key)
		labels["rule"], labels["severity"] = a.Rule, string(a.Severity)
		values := append([]float64(nil), a.Values...)
		frame := data.NewFrame(a.Rule, data.NewField("time", nil, times), data.NewField("value", labels, values))
		frame.Meta = meta()
		k := a.Key
		frame.Meta.Notices = notices(res.Notices, &k, a.Rule)
		out = append(out, frame)
	}
	if len(out) == 0 {
		empty := data.NewFrame("alert", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))
		empty.Meta = meta()
		empty.Meta.Notices = notices(res.Notices, nil, "")
		out = append(out, empty)
	}
	return out
}

// notices turns the diagnosis notices into frame notices, keeping those of one key and rule
// when given: insufficient data is a warning (the answer is partial), not applicable is info.
func notices(ns []diagnosis.Notice, key *series.Key, rule string) []data.Notice {
	var out []data.Notice
	for _, n := range ns {
		if rule != "" && n.Rule != rule {
			continue
		}
		if key != nil && !hasKey(n.Keys, *key) {
			continue
		}
		sev := data.NoticeSeverityWarning
		if n.State == diagnosis.NotApplicable {
			sev = data.NoticeSeverityInfo
		}
		out = append(out, data.Notice{Severity: sev, Text: n.Text()})
	}
	return out
}

func hasKey(keys []series.Key, k series.Key) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func gridTimes(g series.Grid) []time.Time {
	times := make([]time.Time, g.Len)
	for i := range times {
		times[i] = g.Time(i)
	}
	return times
}

func keyName(k series.Key) string {
	if k.Model == "" {
		return k.Instance
	}
	return k.Instance + " " + k.Model
}

// missesText is a finding's slo_misses: each objective's misses while it was active and their
// share of its key's misses over the range, such as "ttft-1s 412 (63%)"; empty without any.
func missesText(ms []slo.Miss) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s %.0f (%.0f%%)", m.Objective, m.Bad, 100*m.Share)
	}
	return strings.Join(parts, ", ")
}
