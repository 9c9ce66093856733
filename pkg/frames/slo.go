package frames

import (
	"fmt"
	"math"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/slo"
)

// SLOStatus is the slo query's `status` format: one row per objective, instance and model,
// then a fleet row per objective and model (instance slo.Fleet). good is the least count of
// good events (exact when the threshold is a bucket bound: bounds says which bucket bounds
// were used); budget_remaining and the burn rates are the worst ends of their intervals.
func SLOStatus(rows []slo.Row, executed string, notices []string) *data.Frame {
	n := len(rows)
	str := func() []string { return make([]string, n) }
	num := func() []*float64 { return make([]*float64, n) }
	name, instance, model, bounds := str(), str(), str(), str()
	good, total, low, high, objective, budget, burn1, burn6 := num(), num(), num(), num(), num(), num(), num(), num()
	for i, r := range rows {
		s := r.Status
		name[i], instance[i], model[i], bounds[i] = r.Objective.Name, r.Key.Instance, r.Key.Model, boundsText(r)
		good[i], total[i] = optFloat(s.Range.GoodLow), optFloat(s.Range.Total)
		low[i], high[i] = optFloat(s.Attainment.Low), optFloat(s.Attainment.High)
		objective[i] = optFloat(r.Objective.Target)
		budget[i], burn1[i], burn6[i] = optFloat(s.Budget.Low), optFloat(s.Burn1h.High), optFloat(s.Burn6h.High)
	}
	unit := func(f *data.Field, u, display string) *data.Field {
		f.Config = &data.FieldConfig{Unit: u, DisplayNameFromDS: display}
		return f
	}
	frame := data.NewFrame("slo_status",
		data.NewField("slo", nil, name),
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		unit(data.NewField("good", nil, good), "short", "Good events (at least)"),
		unit(data.NewField("total", nil, total), "short", "Events"),
		unit(data.NewField("attainment_low", nil, low), "percentunit", "Attainment (low)"),
		unit(data.NewField("attainment_high", nil, high), "percentunit", "Attainment (high)"),
		unit(data.NewField("objective", nil, objective), "percentunit", "Objective"),
		unit(data.NewField("budget_remaining", nil, budget), "percentunit", "Budget left"),
		unit(data.NewField("burn_rate_1h", nil, burn1), "short", "Burn rate 1h"),
		unit(data.NewField("burn_rate_6h", nil, burn6), "short", "Burn rate 6h"),
		data.NewField("bounds", nil, bounds),
	)
	frame.Meta = &data.FrameMeta{Type: data.FrameTypeTable, ExecutedQueryString: executed, Notices: warnings(notices)}
	return frame
}

// NoObjectives is an slo query's answer on a data source without objectives: no rows, and a
// notice that says where to add them.
func NoObjectives() *data.Frame {
	f := data.NewFrame("slo")
	f.Meta = &data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityInfo, Text: slo.NoObjectives}}}
	return f
}

// boundsText says which bucket bounds a row's good events were counted at.
func boundsText(r slo.Row) string {
	switch {
	case r.Objective.Family == "":
		return "exact (finished requests)"
	case math.IsNaN(r.Lower) || math.IsNaN(r.Upper):
		return "instances with different bucket layouts"
	case r.Lower == r.Upper:
		return fmt.Sprintf("exact: %g s is a bucket bound", r.Lower)
	}
	return fmt.Sprintf("between the bucket bounds %g s and %g s", r.Lower, r.Upper)
}

// SLOAttribution is the slo query's `attribution` format: one row per objective, instance and
// finding with the misses (bad) while it was active and their share of the instance's misses
// over the range, and a row rule slo.NoFinding (no from and to) for the misses while none was.
func SLOAttribution(rows []slo.AttributionRow, executed string, notices []string) *data.Frame {
	n := len(rows)
	str := func() []string { return make([]string, n) }
	name, instance, model, rule := str(), str(), str(), str()
	from, to := make([]*time.Time, n), make([]*time.Time, n)
	bad, share := make([]float64, n), make([]float64, n)
	for i, r := range rows {
		name[i], instance[i], model[i], rule[i] = r.Objective.Name, r.Key.Instance, r.Key.Model, r.Rule
		from[i], to[i] = optionalTime(r.From), optionalTime(r.To)
		bad[i], share[i] = r.Bad, r.Share.Share
	}
	shareField := data.NewField("share", nil, share)
	shareField.Config = &data.FieldConfig{Unit: "percentunit"}
	frame := data.NewFrame("slo_attribution",
		data.NewField("slo", nil, name),
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		data.NewField("rule", nil, rule),
		data.NewField("from", nil, from),
		data.NewField("to", nil, to),
		data.NewField("bad", nil, bad),
		shareField,
	)
	frame.Meta = &data.FrameMeta{Type: data.FrameTypeTable, ExecutedQueryString: executed, Notices: warnings(notices)}
	return frame
}

// SLOGoodput is the slo query's `goodput` format: per instance and model, then per model's
// fleet (instance "fleet"), the requests per second that met every objective of the model, as
// the series goodput_low and goodput_high (labelled instance and model_name) between which it
// lies, and, when spans were read (slo.Goodput.Spans), the series goodput_sampled,
// sampled_share and sampled_spans. Notices say why it is an interval, and which objectives it
// leaves out.
func SLOGoodput(rows []slo.Goodput, leftOut []slo.Objective, executed string, notices []string) data.Frames {
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, TypeVersion: data.FrameTypeVersion{0, 1}, ExecutedQueryString: executed}
	}
	ns := warnings(notices)
	for _, o := range leftOut {
		ns = append(ns, data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf(
			"goodput leaves out %s: an inter-token latency is observed once per output token, not per request, so from histograms the requests that met it cannot be joined with the other objectives'", o.Name)})
	}
	ns = append(ns, data.Notice{Severity: data.NoticeSeverityInfo, Text: "From histograms, the requests that met one objective cannot be matched with those that met another: goodput lies between goodput_low (max(0, a + b − 1) of the requests, for shares a and b) and goodput_high (min(a, b)); with one objective on a bucket bound the two are equal"})
	if len(rows) > 0 && rows[0].Spans != nil {
		ns = append(ns, data.Notice{Severity: data.NoticeSeverityInfo, Text: "sampled_share is the share of each step's sampled requests (their spans, by the step they finished in) that were served and met every objective of their model, exactly; sampled_spans is how many spans it rests on, and goodput_sampled that share of the requests per second vLLM traces (those finished without abort: vLLM traces no aborted request)"})
	}
	out := make(data.Frames, 0, len(rows))
	for _, r := range rows {
		times := make([]time.Time, len(r.Low))
		for i := range times {
			times[i] = r.From.Add(time.Duration(i) * r.Step)
		}
		labels := KeyLabels(r.Key)
		field := func(n, unit, display string, v []float64) *data.Field {
			f := data.NewField(n, labels, append([]float64(nil), v...))
			f.Config = &data.FieldConfig{Unit: unit, DisplayNameFromDS: displayName(display, r.Key)}
			return f
		}
		frame := data.NewFrame("goodput", data.NewField("time", nil, times),
			field("goodput_low", "reqps", "Goodput (at least)", r.Low), field("goodput_high", "reqps", "Goodput (at most)", r.High))
		if r.Spans != nil {
			frame.Fields = append(frame.Fields, field("goodput_sampled", "reqps", "Goodput (sampled)", r.FromSpans),
				field("sampled_share", "percentunit", "Sampled share", r.Share), field("sampled_spans", "short", "Sampled spans", r.Spans))
		}
		frame.Meta = meta()
		out = append(out, frame)
	}
	if len(out) == 0 {
		out = append(out, data.NewFrame("goodput", data.NewField("time", nil, []time.Time{}),
			data.NewField("goodput_low", nil, []float64{}), data.NewField("goodput_high", nil, []float64{})))
		out[0].Meta = meta()
		ns = append(ns, data.Notice{Severity: data.NoticeSeverityWarning, Text: "no instance in range has the metrics of an objective goodput joins"})
	}
	out[0].Meta.Notices = ns
	return out
}

// SLOBurn is the slo query's `burn` format for Grafana unified alerting: one numeric series per
// objective, key and severity (slo.BurnValue at each step: above 0 while the severity's burn
// rates hold), labelled slo, instance, model_name and severity, and top_rule when a finding
// holds the largest share of the key's misses over the range, as dataplane time-series-multi
// frames. The first frame alone carries the executed queries and the notices (a fleet's alert
// series would repeat them hundreds of times); with no series, one typed empty frame does.
func SLOBurn(times []time.Time, alerts []slo.BurnAlert, executed string, notices []string) data.Frames {
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	}
	out := make(data.Frames, 0, len(alerts))
	for _, a := range alerts {
		labels := KeyLabels(a.Key)
		labels["slo"], labels["severity"] = a.Objective.Name, string(a.Severity)
		if a.TopRule != "" {
			labels["top_rule"] = a.TopRule
		}
		frame := data.NewFrame("slo_burn", data.NewField("time", nil, append([]time.Time(nil), times...)),
			data.NewField("value", labels, append([]float64(nil), a.Values...)))
		frame.Meta = meta()
		out = append(out, frame)
	}
	if len(out) == 0 {
		empty := data.NewFrame("slo_burn", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))
		empty.Meta = meta()
		out = append(out, empty)
	}
	out[0].Meta.ExecutedQueryString, out[0].Meta.Notices = executed, warnings(notices)
	return out
}

// SLOBudget is the slo query's `budget` format, the budget burn-down: one series per objective
// and key, then per objective and model's fleet (instance slo.Fleet), of the share of the
// budget left at each step (budget_remaining, the worst end of its interval as in SLOStatus;
// negative when overspent), labelled slo, instance and model_name, as dataplane
// time-series-multi frames. The first frame alone carries the executed queries and the notices;
// with no series, one typed empty frame does.
func SLOBudget(times []time.Time, budgets []slo.Budget, executed string, notices []string) data.Frames {
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	}
	out := make(data.Frames, 0, len(budgets))
	for _, b := range budgets {
		labels := KeyLabels(b.Key)
		labels["slo"] = b.Objective.Name
		left := make([]float64, len(b.Left))
		for i, v := range b.Left {
			left[i] = v.Low
		}
		value := data.NewField("budget_remaining", labels, left)
		value.Config = &data.FieldConfig{Unit: "percentunit", DisplayNameFromDS: displayName(b.Objective.Name+" budget left", b.Key)}
		frame := data.NewFrame("slo_budget", data.NewField("time", nil, append([]time.Time(nil), times...)), value)
		frame.Meta = meta()
		out = append(out, frame)
	}
	if len(out) == 0 {
		empty := data.NewFrame("slo_budget", data.NewField("time", nil, []time.Time{}), data.NewField("budget_remaining", nil, []float64{}))
		empty.Meta = meta()
		out = append(out, empty)
	}
	out[0].Meta.ExecutedQueryString, out[0].Meta.Notices = executed, warnings(notices)
	return out
}
