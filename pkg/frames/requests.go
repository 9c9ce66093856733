package frames

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// DrillDownUID is the provisioned request drill-down dashboard that request links open.
const DrillDownUID = "vllm-request-drilldown"

// DrillDownPad is how far before a request's start and after its end the drill-down opens.
const DrillDownPad = 2 * time.Minute

// TraceLinks says where a trace id links to.
type TraceLinks struct {
	// DatasourceUID is Grafana's own data source of the trace backend; empty: no trace link.
	DatasourceUID string
	// Backend names the trace backend in the link's title ("Open trace in Tempo"); Query is the
	// query model with which that data source looks a trace id up, TraceIDValue standing for the
	// id: the backends' models differ (pkg/plugin knows each).
	Backend string
	Query   map[string]any
	// VLLMUID is the uid of the vLLM data source that answered, so that the drill-down
	// queries the same one (a Grafana may have several).
	VLLMUID string
}

// TraceIDValue is the trace id in a link of the requests table: Grafana fills in the row's value.
const TraceIDValue = "${__value.raw}"

// links returns the data links of a trace id field.
func (l TraceLinks) links() []data.DataLink {
	var out []data.DataLink
	if l.DatasourceUID != "" && l.Query != nil {
		out = append(out, data.DataLink{Title: "Open trace in " + l.Backend, Internal: &data.InternalDataLink{DatasourceUID: l.DatasourceUID, Query: l.Query}})
	}
	out = append(out, data.DataLink{
		Title: "Correlated metrics and explanation",
		URL: DrillDownURL(DrillDown{VLLMUID: l.VLLMUID, TracesUID: l.DatasourceUID, TraceID: TraceIDValue,
			Instance: "${__data.fields.instance}", Model: "${__data.fields.model}",
			From: "${__data.fields.drilldown_from}", To: "${__data.fields.drilldown_to}"}),
	})
	return out
}

// DrillDown is what a link to the request drill-down carries: Grafana template expressions
// (such as ${__data.fields.instance}) or values. Empty parts are left out, so that the
// dashboard's own default applies.
type DrillDown struct {
	// VLLMUID and TracesUID set var-datasource and var-traces.
	VLLMUID, TracesUID string
	// TraceID, Instance and Model set var-traceId, var-instance and var-model.
	TraceID, Instance, Model string
	// From and To are the time range (epoch milliseconds or Grafana relative times).
	From, To string
}

// DrillDownURL writes the link to the drill-down dashboard. Every panel of the drill-down
// reads the variables it sets (datasource, traces, traceId, instance, model), so a click keeps
// its context; a findings row links here with its instance and interval, and no trace id.
// Values that are not template expressions are URL-encoded; expressions are left for Grafana
// to fill in.
func DrillDownURL(d DrillDown) string {
	var parts []string
	add := func(key, v string) {
		if v == "" {
			return
		}
		if !strings.HasPrefix(v, "${") {
			v = url.QueryEscape(v)
		}
		parts = append(parts, key+"="+v)
	}
	add("var-datasource", d.VLLMUID)
	add("var-traces", d.TracesUID)
	add("var-traceId", d.TraceID)
	add("var-instance", d.Instance)
	add("var-model", d.Model)
	add("from", d.From)
	add("to", d.To)
	return "/d/" + DrillDownUID + "?" + strings.Join(parts, "&")
}

// Requests returns the requests table: one row per joined request, with its stages, the
// metric state at its start and the worst while it ran, the findings active, the anomaly
// reasons, and links from the trace id to the trace and to the drill-down dashboard.
func Requests(rows []correlate.Row, links TraceLinks, info func(series.Signal) SignalInfo, executed string, notices []string) *data.Frame {
	n := len(rows)
	traceID := make([]string, n)
	start := make([]time.Time, n)
	model, instance := make([]string, n), make([]string, n)
	prompt, output := make([]*int64, n), make([]*int64, n)
	findings, anomalies, details := make([]string, n), make([]string, n), make([]string, n)
	ddFrom, ddTo := make([]string, n), make([]string, n)
	for i := range rows {
		r := &rows[i]
		traceID[i], start[i], model[i], instance[i] = r.TraceID, r.Start, r.Model, r.Instance
		prompt[i] = optInt(r.Present.Has(traces.FieldPromptTokens), r.PromptTokens)
		output[i] = optInt(r.Present.Has(traces.FieldOutputTokens), r.OutputTokens)
		findings[i] = strings.Join(r.FindingRules(), ",")
		codes, texts := make([]string, len(r.Reasons)), make([]string, len(r.Reasons))
		for k, reason := range r.Reasons {
			codes[k], texts[k] = string(reason.Code), reason.Text()
		}
		anomalies[i], details[i] = strings.Join(codes, ","), strings.Join(texts, "; ")
		ddFrom[i] = strconv.FormatInt(r.Start.Add(-DrillDownPad).UnixMilli(), 10)
		ddTo[i] = strconv.FormatInt(r.End.Add(DrillDownPad).UnixMilli(), 10)
	}
	id := data.NewField("trace_id", nil, traceID)
	id.Config = &data.FieldConfig{DisplayName: "Trace ID", Links: links.links()}
	f := data.NewFrame("requests", id,
		named(data.NewField("start", nil, start), "Start", ""),
		named(data.NewField("model", nil, model), "Model", ""),
		named(data.NewField("instance", nil, instance), "Instance", ""),
		named(data.NewField("prompt_tokens", nil, prompt), "Prompt tokens", "short"),
		named(data.NewField("output_tokens", nil, output), "Output tokens", "short"),
	)
	f.Fields = append(f.Fields, stageFields(rows)...)
	f.Fields = append(f.Fields, stateFields(rows, info)...)
	f.Fields = append(f.Fields,
		named(data.NewField("findings", nil, findings), "Findings active", ""),
		named(data.NewField("anomalies", nil, anomalies), "Anomalies", ""),
		named(data.NewField("anomaly_detail", nil, details), "Why anomalous", ""),
		hidden(data.NewField("drilldown_from", nil, ddFrom)),
		hidden(data.NewField("drilldown_to", nil, ddTo)),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, ExecutedQueryString: executed, Notices: warnings(notices)}
	return f
}

// stageFields are the latencies of each request, in seconds, empty where the span lacks them.
func stageFields(rows []correlate.Row) []*data.Field {
	cols := []struct {
		name, label string
		field       traces.Field
		get         func(r *correlate.Row) float64
	}{
		{"queue", "Queue", traces.FieldQueue, func(r *correlate.Row) float64 { return r.Queue }},
		{"prefill", "Prefill", traces.FieldPrefill, func(r *correlate.Row) float64 { return r.Prefill }},
		{"decode", "Decode", traces.FieldDecode, func(r *correlate.Row) float64 { return r.Decode }},
		{"ttft", "TTFT", traces.FieldTTFT, func(r *correlate.Row) float64 { return r.TTFT }},
		{"e2e", "End to end", traces.FieldE2E, func(r *correlate.Row) float64 { return r.E2E }},
	}
	var out []*data.Field
	for _, c := range cols {
		v := make([]*float64, len(rows))
		for i := range rows {
			if rows[i].Present.Has(c.field) {
				v[i] = optFloat(c.get(&rows[i]))
			}
		}
		out = append(out, named(data.NewField(c.name, nil, v), c.label, "s"))
	}
	per := make([]*float64, len(rows))
	for i := range rows {
		per[i] = optFloat(rows[i].DecodePerToken)
	}
	return append(out, named(data.NewField("decode_per_token", nil, per), "Decode per token", "s"))
}

// stateFields are the joined metric states: the time of the as-of sample, then each signal at
// the start and its worst while the request ran.
func stateFields(rows []correlate.Row, info func(series.Signal) SignalInfo) []*data.Field {
	at := make([]*time.Time, len(rows))
	for i := range rows {
		if !rows[i].MetricsAt.IsZero() {
			at[i] = &rows[i].MetricsAt
		}
	}
	out := []*data.Field{named(data.NewField("metrics_at", nil, at), "Metrics at", "")}
	for j, js := range series.Joined {
		si := info(js.Signal)
		startV, worstV := make([]*float64, len(rows)), make([]*float64, len(rows))
		for i := range rows {
			if j < len(rows[i].States) {
				startV[i], worstV[i] = optFloat(rows[i].States[j].AtStart), optFloat(rows[i].States[j].Worst)
			}
		}
		worst := "highest"
		if js.LowerIsWorse {
			worst = "lowest"
		}
		out = append(out,
			named(data.NewField(string(js.Signal), nil, startV), si.Label+" at start", si.Unit),
			named(data.NewField(string(js.Signal)+"_worst", nil, worstV), si.Label+" ("+worst+" while running)", si.Unit))
	}
	return out
}

func named(f *data.Field, label, unit string) *data.Field {
	f.Config = &data.FieldConfig{DisplayName: label, Unit: unit}
	return f
}

// hidden keeps a field out of the table; links still read it.
func hidden(f *data.Field) *data.Field {
	f.Config = &data.FieldConfig{Custom: map[string]any{"hidden": true}}
	return f
}

func optFloat(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func optInt(ok bool, v int64) *int64 {
	if !ok {
		return nil
	}
	return &v
}

func warnings(notices []string) []data.Notice {
	var out []data.Notice
	for _, n := range notices {
		out = append(out, data.Notice{Severity: data.NoticeSeverityWarning, Text: n})
	}
	return out
}
