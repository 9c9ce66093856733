package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/series"
)

// Explanation returns the frames of one explained request: the explanation (one row: the
// sentence, the stages in seconds and shares, the dominant stage, the findings, the metric
// state), the stage breakdown (a small table for a bar gauge), and the request's interval as an
// annotation (time, timeEnd, title, text, tags) to mark it on the signals around it.
func Explanation(e correlate.Explanation, info func(series.Signal) SignalInfo, notices []string) data.Frames {
	r := e.Row
	var chosen, action string
	if e.Finding != nil {
		chosen, action = e.Finding.Rule, e.Finding.Action
	}
	codes := make([]string, len(r.Reasons))
	for i, reason := range r.Reasons {
		codes[i] = string(reason.Code)
	}
	expl := data.NewFrame("explanation",
		named(data.NewField("trace_id", nil, []string{r.TraceID}), "Trace ID", ""),
		named(data.NewField("start", nil, []time.Time{r.Start}), "Start", ""),
		named(data.NewField("end", nil, []time.Time{r.End}), "End", ""),
		named(data.NewField("instance", nil, []string{r.Instance}), "Instance", ""),
		named(data.NewField("model", nil, []string{r.Model}), "Model", ""),
		named(data.NewField("explanation", nil, []string{e.Sentence}), "Explanation", ""),
		named(data.NewField("dominant_stage", nil, []string{string(e.Dominant)}), "Dominant stage", ""),
	)
	for _, st := range e.Stages {
		expl.Fields = append(expl.Fields,
			named(data.NewField(string(st.Stage)+"_seconds", nil, []*float64{optFloat(st.Seconds)}), stageLabel(st.Stage)+" time", "s"),
			named(data.NewField(string(st.Stage)+"_share", nil, []*float64{optFloat(st.Share)}), stageLabel(st.Stage)+" share", "percentunit"))
	}
	expl.Fields = append(expl.Fields,
		named(data.NewField("findings", nil, []string{strings.Join(r.FindingRules(), ",")}), "Findings active", ""),
		named(data.NewField("finding", nil, []string{chosen}), "Finding named", ""),
		named(data.NewField("action", nil, []string{action}), "Action", ""),
		named(data.NewField("profile", nil, []string{e.Profile}), "Profile", ""),
		named(data.NewField("anomalies", nil, []string{strings.Join(codes, ",")}), "Anomalies", ""),
	)
	expl.Fields = append(expl.Fields, stateFields([]correlate.Row{r}, info)...)
	expl.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Notices: warnings(append(notices, e.Notes...))}

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

	tags := append([]string{"request", r.Instance}, r.FindingRules()...)
	interval := data.NewFrame(RequestIntervalFrame,
		data.NewField("time", nil, []time.Time{r.Start}),
		data.NewField("timeEnd", nil, []time.Time{r.End}),
		data.NewField("title", nil, []string{"Request " + r.TraceID}),
		data.NewField("text", nil, []string{e.Sentence}),
		data.NewField("tags", nil, []string{strings.Join(tags, ",")}),
	)
	return data.Frames{expl, stages, interval}
}

// RequestIntervalFrame names the explanation's frame of the request's own interval (time,
// timeEnd, title, text, tags), which serves as an annotation region.
const RequestIntervalFrame = "request"

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
