package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// Explanation returns the frames of one explained request, in the order a reader needs them,
// no table wider than MaxFields (Explore shows the first 20 columns of a table only):
//   - the explanation, one row that reads first: the sentence, the slow stage (the one the
//     sentence explains), the finding that explains it and its action, the profiling steps;
//     then the objectives the request met and missed (judged), the ids and times, the dominant stage, the findings active, the anomalies and each
//     stage's time;
//   - the stage breakdown (a small table for a bar gauge);
//   - the details, one row: each stage's share and the metric state at the request's start
//     and at its worst while it ran;
//   - with around, the signals of the request's window (ExplanationSignals);
//   - the request's interval (time, timeEnd, title, text, tags), tagged as annotations, so that
//     Explore and the time series panels draw it as a region on the signals' graph instead of
//     listing it as a table.
func Explanation(e correlate.Explanation, judged []slo.Judgement, info func(series.Signal) SignalInfo, notices []string, around *Around) data.Frames {
	r := e.Row
	var chosen, action string
	if e.Finding != nil {
		chosen, action = e.Finding.Rule, e.Finding.Action
	}
	codes := make([]string, len(r.Reasons))
	for i, reason := range r.Reasons {
		codes[i] = string(reason.Code)
	}
	objectives := make([]string, len(judged))
	for i, j := range judged {
		objectives[i] = j.String()
	}
	expl := data.NewFrame(ExplanationFrame,
		named(data.NewField("explanation", nil, []string{e.Sentence}), "Explanation", ""),
		named(data.NewField("slow_stage", nil, []string{string(e.Focus)}), "Slow stage", ""),
		named(data.NewField("finding", nil, []string{chosen}), "Finding", ""),
		named(data.NewField("action", nil, []string{action}), "Action", ""),
		named(data.NewField("profile", nil, []string{e.Profile}), "Profile", ""),
		named(data.NewField("objectives", nil, []string{strings.Join(objectives, "; ")}), "Objectives", ""),
		named(data.NewField("trace_id", nil, []string{r.TraceID}), "Trace ID", ""),
		named(data.NewField("start", nil, []time.Time{r.Start}), "Start", ""),
		named(data.NewField("end", nil, []time.Time{r.End}), "End", ""),
		named(data.NewField("instance", nil, []string{r.Instance}), "Instance", ""),
		named(data.NewField("model", nil, []string{r.Model}), "Model", ""),
		named(data.NewField("dominant_stage", nil, []string{string(e.Dominant)}), "Dominant stage", ""),
		named(data.NewField("findings", nil, []string{strings.Join(r.FindingRules(), ",")}), "Findings active", ""),
		named(data.NewField("anomalies", nil, []string{strings.Join(codes, ",")}), "Anomalies", ""),
	)
	details := data.NewFrame(ExplanationDetailsFrame)
	for _, st := range e.Stages {
		expl.Fields = append(expl.Fields,
			named(data.NewField(string(st.Stage)+"_seconds", nil, []*float64{optFloat(st.Seconds)}), stageLabel(st.Stage)+" time", "s"))
		details.Fields = append(details.Fields,
			named(data.NewField(string(st.Stage)+"_share", nil, []*float64{optFloat(st.Share)}), stageLabel(st.Stage)+" share", "percentunit"))
	}
	details.Fields = append(details.Fields, stateFields([]correlate.Row{r}, info)...)
	expl.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Notices: warnings(append(notices, e.Notes...))}
	details.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}

	stages := data.NewFrame("stages",
		named(data.NewField("stage", nil, []string{}), "Stage", ""),
		named(data.NewField("seconds", nil, []float64{}), "Time", "s"),
		named(data.NewField("share", nil, []float64{}), "Share", "percentunit"),
	)
	for _, st := range e.Stages {
		if s := optFloat(st.Seconds); s != nil {
			share := 0.0
			if p := optFloat(st.Share); p != nil {
				share = *p
			}
			stages.AppendRow(string(st.Stage), *s, share)
		}
	}

	interval := RequestInterval(e)
	interval.Meta = &data.FrameMeta{DataTopic: data.DataTopicAnnotations}
	if around == nil {
		return data.Frames{expl, stages, details, interval}
	}
	sig := ExplanationSignals(around.Set, around.Signals, info, around.From, around.To, around.Executed)
	return data.Frames{expl, stages, details, sig, interval}
}

// ExplanationFrame and ExplanationDetailsFrame name an explain answer's one-row frames: the
// explanation that reads first, and the numbers behind it.
const (
	ExplanationFrame        = "explanation"
	ExplanationDetailsFrame = "explanation_details"
)

// MaxFields is the most fields an explain answer's tables have: Explore shows the first 20
// columns of a table only, behind a warning.
const MaxFields = 20

// Around is the window of signals graphed beside an explained request, with the plan they
// were fetched by (its executedQueryString).
type Around struct {
	Set      *series.Set
	Signals  []series.Signal
	From, To time.Time
	Executed string
}

// NoRequest is the answer of an explain query without a trace id (the drill-down opened on its
// own, not from a request link): an instruction, not an error badge on its panels. The
// instruction is the explanation field's one row, so a table shows it where the explanation
// would be, and the notice says it too.
func NoRequest() data.Frames {
	const what = "No request chosen: click a trace id in Anomalous requests (or set the Trace ID variable) to explain that request here."
	f := data.NewFrame("explanation", named(data.NewField("explanation", nil, []string{what}), "Explanation", ""))
	f.Meta = &data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityInfo,
		Text: what + " An explain query reads explain <traceId>."}}}
	return data.Frames{f}
}

// RequestInterval is the request's interval as the one row of an annotation frame (time,
// timeEnd, title, text, tags), the answer of an annotation query: Grafana's annotation
// queries read plain frames, so it carries no data topic.
func RequestInterval(e correlate.Explanation) *data.Frame {
	r := e.Row
	tags := append([]string{"request", r.Instance}, r.FindingRules()...)
	return data.NewFrame(RequestIntervalFrame,
		data.NewField("time", nil, []time.Time{r.Start}),
		data.NewField("timeEnd", nil, []time.Time{r.End}),
		data.NewField("title", nil, []string{"Request " + r.TraceID}),
		data.NewField("text", nil, []string{e.Sentence}),
		data.NewField("tags", nil, []string{strings.Join(tags, ",")}),
	)
}

// RequestIntervalFrame names the explanation's frame of the request's own interval.
const RequestIntervalFrame = "request"

// ExplanationSignalsFrame names the explanation's frame of the signals around the request.
const ExplanationSignalsFrame = "signals"

// ExplanationSignals returns the signals of a request's instance over [from, to] as one wide
// time-series frame (a time field, then one field per signal and key, labelled with instance
// and model_name), for one graph beside the explanation rather than a table per signal.
func ExplanationSignals(set *series.Set, wanted []series.Signal, info func(series.Signal) SignalInfo, from, to time.Time, executed string) *data.Frame {
	g := set.Grid
	var idx []int
	for i := range g.Len {
		if t := g.Time(i); !t.Before(from) && !t.After(to) {
			idx = append(idx, i)
		}
	}
	times := make([]time.Time, len(idx))
	for n, i := range idx {
		times[n] = g.Time(i)
	}
	f := data.NewFrame(ExplanationSignalsFrame, data.NewField("time", nil, times))
	eachSeries(set, wanted, info, func(s *series.Series, si SignalInfo) {
		values := make([]*float64, len(idx))
		for n, i := range idx {
			values[n] = optFloat(s.Values[i])
		}
		field := data.NewField(string(s.Signal), KeyLabels(s.Key), values)
		field.Config = &data.FieldConfig{DisplayNameFromDS: displayName(si.Label, s.Key), Unit: si.Unit}
		f.Fields = append(f.Fields, field)
	})
	f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, TypeVersion: data.FrameTypeVersion{0, 1},
		PreferredVisualization: data.VisTypeGraph, ExecutedQueryString: executed}
	return f
}

func stageLabel(s correlate.Stage) string {
	switch s {
	case correlate.StageQueue:
		return "Queue"
	case correlate.StagePrefill:
		return "Prefill"
	case correlate.StageDecode:
		return "Decode"
	}
	return "Other"
}
