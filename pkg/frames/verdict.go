package frames

import (
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/verdict"
)

// Verdict returns the verdicts as one table frame: one row per instance, model and
// optimisation, with the expectation, what each window measured, the change, the verdict and
// its reason, then the load of both windows (so that a reader can check the comparison is like
// for like) and the spans the windows actually cover.
func Verdict(rows []verdict.Row, executed string, notices []string) data.Frames {
	n := len(rows)
	str := func() []string { return make([]string, n) }
	instance, model, opt, expected := str(), str(), str(), str()
	baseline, current, change, outcome, reason := str(), str(), str(), str(), str()
	num := func() []*float64 { return make([]*float64, n) }
	bRate, cRate, bPrompt, cPrompt, bOutput, cOutput, bReq, cReq := num(), num(), num(), num(), num(), num(), num(), num()
	tm := func() []*time.Time { return make([]*time.Time, n) }
	bFrom, bTo, cFrom, cTo := tm(), tm(), tm(), tm()
	for i, r := range rows {
		instance[i], model[i], opt[i], expected[i] = r.Key.Instance, r.Key.Model, string(r.Optimisation), r.Expected
		baseline[i], current[i], change[i], outcome[i], reason[i] = r.Baseline, r.Current, r.Change, string(r.Outcome), r.Reason
		b, c := r.BaselineStats, r.CurrentStats
		bRate[i], cRate[i] = optFloat(b.RequestRate), optFloat(c.RequestRate)
		bPrompt[i], cPrompt[i] = optFloat(b.PromptLength), optFloat(c.PromptLength)
		bOutput[i], cOutput[i] = optFloat(b.OutputLength), optFloat(c.OutputLength)
		bReq[i], cReq[i] = optFloat(b.Requests), optFloat(c.Requests)
		bFrom[i], bTo[i] = optionalTime(b.Covered.From), optionalTime(b.Covered.To)
		cFrom[i], cTo[i] = optionalTime(c.Covered.From), optionalTime(c.Covered.To)
	}
	unit := func(f *data.Field, u, display string) *data.Field {
		f.Config = &data.FieldConfig{Unit: u, DisplayNameFromDS: display}
		return f
	}
	frame := data.NewFrame("verdict",
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		data.NewField("optimisation", nil, opt),
		data.NewField("expected", nil, expected),
		data.NewField("baseline", nil, baseline),
		data.NewField("current", nil, current),
		data.NewField("change", nil, change),
		data.NewField("verdict", nil, outcome),
		data.NewField("reason", nil, reason),
		unit(data.NewField("baseline_request_rate", nil, bRate), "reqps", "Baseline request rate"),
		unit(data.NewField("current_request_rate", nil, cRate), "reqps", "Current request rate"),
		unit(data.NewField("baseline_prompt_length", nil, bPrompt), "short", "Baseline prompt tokens (mean)"),
		unit(data.NewField("current_prompt_length", nil, cPrompt), "short", "Current prompt tokens (mean)"),
		unit(data.NewField("baseline_output_length", nil, bOutput), "short", "Baseline output tokens (mean)"),
		unit(data.NewField("current_output_length", nil, cOutput), "short", "Current output tokens (mean)"),
		unit(data.NewField("baseline_requests", nil, bReq), "short", "Baseline requests"),
		unit(data.NewField("current_requests", nil, cReq), "short", "Current requests"),
		data.NewField("baseline_from", nil, bFrom),
		data.NewField("baseline_to", nil, bTo),
		data.NewField("current_from", nil, cFrom),
		data.NewField("current_to", nil, cTo),
	)
	frame.Meta = &data.FrameMeta{Type: data.FrameTypeTable, ExecutedQueryString: executed, Notices: warnings(notices)}
	return data.Frames{frame}
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Promise returns the check of a rule's promise as a table frame, named promise: one row per
// instance and model, with the promised signal and direction, its value in each window, the
// relative change (empty from 0), the outcome and the sentence that says why.
func Promise(rule string, checks []verdict.PromiseCheck) *data.Frame {
	n := len(checks)
	str := func() []string { return make([]string, n) }
	instance, model, rules, metric, direction, outcome, sentence := str(), str(), str(), str(), str(), str(), str()
	before, after, change := make([]*float64, n), make([]*float64, n), make([]*float64, n)
	for i, c := range checks {
		instance[i], model[i], rules[i] = c.Key.Instance, c.Key.Model, rule
		metric[i], direction[i] = string(c.Promise.Signal), string(c.Promise.Direction)
		before[i], after[i], change[i] = optFloat(c.Before), optFloat(c.After), optFloat(c.Change)
		outcome[i], sentence[i] = string(c.Outcome), c.Sentence
	}
	changeField := data.NewField("change", nil, change)
	changeField.Config = &data.FieldConfig{Unit: "percentunit"}
	frame := data.NewFrame("promise",
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		data.NewField("rule", nil, rules),
		data.NewField("metric", nil, metric),
		data.NewField("direction", nil, direction),
		data.NewField("before", nil, before),
		data.NewField("after", nil, after),
		changeField,
		data.NewField("outcome", nil, outcome),
		data.NewField("sentence", nil, sentence),
	)
	frame.Meta = &data.FrameMeta{Type: data.FrameTypeTable}
	return frame
}
