package frames

import (
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// RecommendationSeries is the `recommendation` format, for alert summaries: one numeric series
// per rule and key that the alert format has (labelled rule, instance and model_name, without
// severity, so that Grafana matches it to every severity's alert instance), holding at each
// step inside a finding of that rule and key the finding's recommended value, NaN elsewhere. A
// Grafana alert rule reduces it (last, drop non-numbers) and names the value in its summary
// through {{ index .Values "<refId>" }}. Every key gets a series, all NaN when it has no
// finding, and an empty range still gets one frame: a data query without frames would turn
// the whole alert rule to NoData.
func RecommendationSeries(res diagnosis.Result) data.Frames {
	times := gridTimes(res.Grid)
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	}
	type ruleKey struct {
		rule string
		key  series.Key
	}
	var order []ruleKey
	values := map[ruleKey][]float64{}
	for _, a := range res.Alerts {
		k := ruleKey{a.Rule, a.Key}
		if _, ok := values[k]; ok {
			continue
		}
		values[k] = series.NaNs(len(times))
		order = append(order, k)
	}
	for _, f := range res.Findings {
		v, ok := values[ruleKey{f.Rule, f.Key}]
		if !ok || !f.Recommendation.Known() {
			continue
		}
		for i, t := range times {
			if !t.Before(f.Start) && !t.After(f.End) {
				v[i] = f.Recommendation.Value
			}
		}
	}
	out := make(data.Frames, 0, len(order))
	for _, k := range order {
		labels := KeyLabels(k.key)
		labels["rule"] = k.rule
		frame := data.NewFrame(k.rule, data.NewField("time", nil, times), data.NewField("value", labels, values[k]))
		frame.Meta = meta()
		out = append(out, frame)
	}
	if len(out) == 0 {
		empty := data.NewFrame("recommendation", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))
		empty.Meta = meta()
		out = append(out, empty)
	}
	return out
}
