package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/stack"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

const fleetSize = 14

// topK is the dashboards' topk variable as this test sets it: graphs draw at most topK + 1
// series per signal (the worst instances and the fleet median).
const topK = 5

// fleetBed is a simulated fleet of 14 instances (five faulty) over two hours in a real
// Prometheus, with one span in five in a real Jaeger, and the plugin pointed at both.
type fleetBed struct {
	tp      datasourcetest.TestPlugin
	pc      backend.PluginContext
	truth   []sim.Finding
	faulty  map[string]string
	from    time.Time
	to      time.Time
	traceID string
	// jaegerURL is the Jaeger query API Grafana's own Jaeger data source would read.
	jaegerURL string
	// saturated is the instance whose KV cache the simulator saturated.
	saturated string
}

func newFleetBed(t *testing.T) *fleetBed {
	t.Helper()
	sc, err := sim.Fleet(fleetSize)
	require.NoError(t, err)
	res, err := sim.Run(sc, runStart, runFor, scrape, sim.WithSpanSampling(5))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, res.WriteFile(file))
	prom := testbed.Prometheus(t, file)
	jaeger := testbed.Jaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, sim.ExportAll(ctx, sc, jaeger.OTLPGRPC, res.Spans, 10*time.Second))

	// The dashboards' default range, now-1h, opened at the end of the run: the faults (the
	// middle third) and the healthy hour after them; the verdict's default baseline is the
	// hour before.
	b := &fleetBed{truth: res.Truth, faulty: sim.FleetFaulty(fleetSize), jaegerURL: jaeger.QueryURL,
		to: runStart.Add(runFor), from: runStart.Add(runFor - time.Hour)}
	// The provisioned data source's objectives, which the dashboards' SLOs rows are written for.
	slos, err := stack.ProvisionedSLOs("vllm")
	require.NoError(t, err)
	tp, pc := pluginFor(t, prom.URL, map[string]any{
		"tracesBackend": "jaeger", "tracesUrl": jaeger.QueryURL, "tracesDatasourceUid": "jaeger",
		"slos": slos,
	})
	waitForSpans(t, tp, pc, b.from, b.to)
	b.tp, b.pc = tp, pc
	for inst, rule := range b.faulty {
		if rule == sim.RuleKVCacheSaturated {
			b.saturated = inst
		}
	}
	require.NotEmpty(t, b.saturated)
	b.traceID = slowestTrace(res.Spans, b.saturated, b.from, b.to)
	return b
}

// vars replaces the dashboards' variables as Grafana does with every model selected (their
// allValue .*), the verdict's baseline left at its default (empty) and topk at topK.
func vars(instance, traceID string) *strings.Replacer {
	return strings.NewReplacer(
		`"${datasource}"`, `"vllm"`, `"$instance"`, `"`+instance+`"`, `"$model"`, `".*"`, `"$traceId"`, `"`+traceID+`"`,
		`"$baselineFrom"`, `""`, `"$baselineTo"`, `""`, `"$topk"`, `"`+strconv.Itoa(topK)+`"`,
	)
}

// run answers a dashboard query with the instance variable set to instance, and the trace id
// to the slowest request of the saturated instance.
func (b *fleetBed) run(t *testing.T, tg stack.Target, instance string) (plugin.Query, backend.DataResponse) {
	t.Helper()
	return b.runTrace(t, tg, instance, b.traceID)
}

// runTrace is run with the trace id variable set to traceID ("" as when the drill-down is
// opened on its own).
func (b *fleetBed) runTrace(t *testing.T, tg stack.Target, instance, traceID string) (plugin.Query, backend.DataResponse) {
	t.Helper()
	raw := vars(instance, traceID).Replace(string(tg.JSON))
	require.NotContains(t, raw, `"$`, "a template variable this test does not set")
	q, err := stack.DecodeQuery([]byte(raw))
	require.NoError(t, err)
	model := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(raw), &model))
	model["queryType"] = q.QueryType()
	resp := ask(t, b.tp, b.pc, query(tg.RefID, model, b.from, b.to, scrape))
	return q, resp.Responses[tg.RefID]
}

// TestDashboardsOnAFleet runs every plugin query of every provisioned dashboard on a fleet of
// 14 instances, as Grafana would on opening it: each answers with data or with a notice that
// says why not, never an error. The fleet, timeline and annotation queries are then checked
// against what the simulator injected.
func TestDashboardsOnAFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: simulates a fleet and starts Prometheus and Jaeger")
	}
	b := newFleetBed(t)
	targets, err := stack.Targets(filepath.Join(stack.RepoRoot(), "dashboards"))
	require.NoError(t, err)
	ran := 0
	for _, tg := range targets {
		if tg.Datasource.Type != stack.PluginID {
			continue
		}
		ran++
		t.Run(tg.File+"/"+tg.Panel+"/"+tg.RefID, func(t *testing.T) {
			q, r := b.run(t, tg, ".*")
			require.NoError(t, r.Error, "panel %q", tg.Panel)
			require.NotEmpty(t, r.Frames)
			if !hasRows(r.Frames) {
				assert.NotEmpty(t, noticesOf(r.Frames), "panel %q has no data and no notice saying why", tg.Panel)
			}
			if _, ok := q.(plugin.ExplainQuery); ok && tg.PanelType != "annotation" {
				for _, name := range panelFieldRefs(t, tg) {
					assert.True(t, hasField(r.Frames, name), "panel %q reads field %q, which no frame of the explain answer has", tg.Panel, name)
				}
			}
			switch q := q.(type) {
			case plugin.DiagnosisQuery:
				switch q.Format {
				case plugin.FormatFleet:
					b.checkFleet(t, r.Frames)
				case plugin.FormatTimeline:
					b.checkTimeline(t, r.Frames)
					_, one := b.run(t, tg, b.saturated)
					require.NoError(t, one.Error)
					b.checkTimelineOfOne(t, one.Frames)
				}
			case plugin.SLOQuery:
				switch q.Format {
				case plugin.FormatSLOStatus:
					b.checkSLOStatus(t, r.Frames)
				case plugin.FormatSLOBudget, plugin.FormatSLOGoodput:
					checkFleetSeries(t, tg, q.Format, r.Frames)
				}
			case plugin.SignalsQuery:
				if tg.PanelType == "timeseries" {
					b.checkGraph(t, tg, r.Frames)
				}
			}
		})
	}
	assert.Greater(t, ran, 10, "the dashboards' plugin queries")

	t.Run("annotations follow the instance variable", func(t *testing.T) {
		inst := b.saturated
		var rows int
		for _, tg := range targets {
			if tg.PanelType != "annotation" {
				continue
			}
			q, all := b.run(t, tg, ".*")
			if _, ok := q.(plugin.DiagnosisQuery); !ok {
				continue // the drill-down's own request
			}
			require.NoError(t, all.Error)
			assert.Zero(t, all.Frames[0].Rows(), "%s, %s shades findings over every instance", tg.File, tg.Panel)
			assert.NotEmpty(t, noticesOf(all.Frames), "%s, %s answers no finding and says not why", tg.File, tg.Panel)
			_, one := b.run(t, tg, inst)
			require.NoError(t, one.Error)
			for _, f := range findingsOf(t, one.Frames[0]) {
				assert.Equal(t, inst, f.instance, "%s, %s with instance=%s", tg.File, tg.Panel, inst)
				rows++
			}
		}
		assert.Positive(t, rows, "the annotations draw no finding on %s, whose KV cache was saturated", inst)
	})

	t.Run("the drill-down opened without a trace id", func(t *testing.T) {
		for _, explanation := range b.drillDown(t, targets, "") {
			assert.Contains(t, explanation, "click a trace id")
		}
	})

	t.Run("the drill-down opened on its trace-id variable's first request", func(t *testing.T) {
		traceID := b.firstAnomalousRequest(t)
		for _, explanation := range b.drillDown(t, targets, traceID) {
			assert.NotContains(t, explanation, "click a trace id")
		}
		// The Trace panel is Grafana's Jaeger data source asking Jaeger for this trace.
		resp, err := http.Get(b.jaegerURL + "/api/traces/" + traceID)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var trace struct {
			Data []struct {
				Spans []json.RawMessage `json:"spans"`
			} `json:"data"`
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, "Jaeger on trace %s", traceID)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&trace))
		require.NotEmpty(t, trace.Data, "Jaeger has no trace %s", traceID)
		assert.NotEmpty(t, trace.Data[0].Spans, "trace %s has no span", traceID)
	})
}

// drillDown runs every plugin panel of the drill-down with the trace id variable set to
// traceID, each without an error, and returns the explanations its explain panels answer (at
// least one).
func (b *fleetBed) drillDown(t *testing.T, targets []stack.Target, traceID string) []any {
	t.Helper()
	var explanations []any
	for _, tg := range targets {
		if tg.DashboardUID != frames.DrillDownUID || tg.Datasource.Type != stack.PluginID {
			continue
		}
		q, r := b.runTrace(t, tg, ".*", traceID)
		require.NoError(t, r.Error, "panel %q", tg.Panel)
		if e, ok := q.(plugin.ExplainQuery); ok && e.Format == "" {
			f, _ := r.Frames[0].FieldByName("explanation")
			require.NotNil(t, f, "panel %q", tg.Panel)
			explanations = append(explanations, f.At(0))
		}
	}
	require.NotEmpty(t, explanations, "the drill-down explains no request")
	return explanations
}

// firstAnomalousRequest is the value the drill-down's trace-id variable takes when the
// dashboard opens without one: the first row of the requests query it asks (src/variables.ts,
// kind anomalousRequests) with every instance and model selected.
func (b *fleetBed) firstAnomalousRequest(t *testing.T) string {
	t.Helper()
	model := map[string]any{"queryType": "requests", "anomalousOnly": true,
		"instance": ".*", "model": ".*", "limit": 20}
	r := ask(t, b.tp, b.pc, query("traceId", model, b.from, b.to, scrape)).Responses["traceId"]
	require.NoError(t, r.Error)
	require.NotEmpty(t, r.Frames, "the requests query answers no frame")
	f, _ := r.Frames[0].FieldByName("trace_id")
	require.NotNil(t, f, "the requests frame has no trace_id")
	require.Positive(t, f.Len(), "no anomalous request to open the drill-down on")
	id, ok := f.At(0).(string)
	require.True(t, ok && id != "", "the first trace id is %v", f.At(0))
	return id
}

// checkGraph: with every instance selected, a graph's query draws at most topK + 1 series
// per signal (its worst instances and the fleet median, when more instances than topK have
// it); the KV cache graph's worst include the instance whose KV cache the simulator saturated.
func (b *fleetBed) checkGraph(t *testing.T, tg stack.Target, fs data.Frames) {
	perSignal := map[string][]string{}
	for _, f := range fs {
		if len(f.Fields) < 2 {
			continue
		}
		perSignal[f.Name] = append(perSignal[f.Name], f.Fields[1].Labels["instance"])
	}
	for sig, insts := range perSignal {
		assert.LessOrEqual(t, len(insts), topK+1, "panel %q draws %d series of %s", tg.Panel, len(insts), sig)
		if len(insts) == topK+1 { // more instances than topK have the signal: the worst and the median
			assert.Equal(t, frames.MedianLabel, insts[topK], "panel %q: %s ends without the fleet median", tg.Panel, sig)
		}
	}
	t.Logf("%s: series per signal %v", tg.Panel, perSignal)
	if kv, ok := perSignal[string(series.KVUsage)]; ok {
		assert.Contains(t, kv, b.saturated, "panel %q: the worst KV usage leaves out %s, whose KV cache was saturated", tg.Panel, b.saturated)
	}
}

// checkSLOStatus: every provisioned objective has a line on each instance of the fleet and a
// fleet line, each attainment an interval (low at most high).
func (b *fleetBed) checkSLOStatus(t *testing.T, fs data.Frames) {
	require.Len(t, fs, 1)
	f := fs[0]
	name, _ := f.FieldByName("slo")
	inst, _ := f.FieldByName("instance")
	low, _ := f.FieldByName("attainment_low")
	high, _ := f.FieldByName("attainment_high")
	require.NotNil(t, high)
	instances := map[string]map[string]bool{}
	for i := 0; i < f.Rows(); i++ {
		o := name.At(i).(string)
		if instances[o] == nil {
			instances[o] = map[string]bool{}
		}
		instances[o][inst.At(i).(string)] = true
		if l, h := low.At(i).(*float64), high.At(i).(*float64); l != nil && h != nil {
			assert.LessOrEqual(t, *l, *h, "%s on %s", o, inst.At(i))
		}
	}
	raw, err := stack.ProvisionedSLOs("vllm")
	require.NoError(t, err)
	var objectives []struct{ Name string }
	require.NoError(t, json.Unmarshal(raw, &objectives))
	for _, o := range objectives {
		assert.True(t, instances[o.Name][slo.Fleet], "%s has no fleet line", o.Name)
		assert.Len(t, instances[o.Name], fleetSize+1, "%s: the lines of each instance and the fleet", o.Name)
	}
}

// checkFleetSeries: an slo graph's answer names each series by its instance first, which the
// panel's filter reads to keep the fleet's alone, and has a fleet series of every provisioned
// objective (budget) or of some model (goodput).
func checkFleetSeries(t *testing.T, tg stack.Target, format plugin.SLOFormat, fs data.Frames) {
	fleet := map[string]bool{}
	for _, f := range fs {
		for _, v := range f.Fields[1:] {
			instance := v.Labels["instance"]
			require.NotNil(t, v.Config, "panel %q: %s has no display name", tg.Panel, v.Name)
			assert.True(t, strings.HasPrefix(v.Config.DisplayNameFromDS, instance+" · "), "panel %q: %q does not start with its instance %q", tg.Panel, v.Config.DisplayNameFromDS, instance)
			if instance == slo.Fleet {
				fleet[v.Labels["slo"]] = true
			}
		}
	}
	if format != plugin.FormatSLOBudget {
		assert.NotEmpty(t, fleet, "panel %q has no fleet series", tg.Panel)
		return
	}
	raw, err := stack.ProvisionedSLOs("vllm")
	require.NoError(t, err)
	var objectives []struct{ Name string }
	require.NoError(t, json.Unmarshal(raw, &objectives))
	for _, o := range objectives {
		assert.True(t, fleet[o.Name], "panel %q: %s has no fleet series", tg.Panel, o.Name)
	}
}

// inRange lists the injected faults that overlap the bed's range, by instance.
func (b *fleetBed) inRange() map[string]string {
	out := map[string]string{}
	for _, tr := range b.truth {
		if tr.Start.Before(b.to) && tr.End.After(b.from) {
			out[tr.Instance] = tr.Rule
		}
	}
	return out
}

// checkFleet: one line per instance; every instance with an injected fault in the range has
// a finding, every other one is healthy, and the lines with a finding come first.
func (b *fleetBed) checkFleet(t *testing.T, fs data.Frames) {
	require.Len(t, fs, 1)
	f := fs[0]
	require.Equal(t, fleetSize, f.Rows(), "one line per instance")
	inst, _ := f.FieldByName("instance")
	finding, _ := f.FieldByName("finding")
	faults := b.inRange()
	require.NotEmpty(t, faults)
	seenHealthy := false
	for i := 0; i < f.Rows(); i++ {
		name, what := inst.At(i).(string), finding.At(i).(string)
		_, faulty := faults[name]
		if faulty {
			assert.NotEqual(t, frames.Healthy, what, "%s had %s injected", name, faults[name])
			assert.False(t, seenHealthy, "%s (faulty) is listed after a healthy instance", name)
		} else {
			assert.Equal(t, frames.Healthy, what, "%s had no fault injected", name)
			seenHealthy = true
		}
	}
}

// checkTimeline: with every instance selected, one headline row per instance and no rule
// row; each instance with an injected fault in the range leaves ok at some step.
func (b *fleetBed) checkTimeline(t *testing.T, fs data.Frames) {
	headlines := map[string]int{}
	eventful := map[string]bool{}
	for _, f := range fs {
		for _, field := range f.Fields[1:] {
			require.Equal(t, "headline", field.Name, "a rule row with every instance selected")
			inst := field.Labels["instance"]
			headlines[inst]++
			for i := 0; i < field.Len(); i++ {
				s := field.At(i).(string)
				eventful[inst] = eventful[inst] || (s != diagnosis.OK.String() && s != diagnosis.InsufficientData.String() && s != diagnosis.NotApplicable.String())
			}
		}
	}
	assert.LessOrEqual(t, len(headlines), fleetSize)
	for inst, n := range headlines {
		assert.Equal(t, 1, n, "%s has %d headline rows", inst, n)
	}
	for inst, rule := range b.inRange() {
		assert.True(t, eventful[inst], "%s's headline row never shows %s, injected there", inst, rule)
	}
	t.Logf("timeline: %d headline rows", len(headlines))
}

// checkTimelineOfOne: with one instance selected, its headline and rule rows, the injected
// rule's pending or firing.
func (b *fleetBed) checkTimelineOfOne(t *testing.T, fs data.Frames) {
	headlines := map[string]int{}
	ruleRows := map[string]bool{}
	for _, f := range fs {
		for _, field := range f.Fields[1:] {
			inst := field.Labels["instance"]
			if field.Name == "headline" {
				headlines[inst]++
				continue
			}
			for i := 0; i < field.Len(); i++ {
				s := field.At(i).(string)
				if s == diagnosis.Pending.String() || s == diagnosis.Firing.String() {
					ruleRows[field.Name+" "+inst] = true
				}
			}
		}
	}
	assert.Equal(t, map[string]int{b.saturated: 1}, headlines, "the headline rows of one instance")
	assert.True(t, ruleRows[b.faulty[b.saturated]+" "+b.saturated], "no %s row for %s, where it was injected", b.faulty[b.saturated], b.saturated)
}

func hasRows(fs data.Frames) bool {
	for _, f := range fs {
		if f.Rows() > 0 {
			return true
		}
	}
	return false
}

func noticesOf(fs data.Frames) []data.Notice {
	var out []data.Notice
	for _, f := range fs {
		if f.Meta != nil {
			out = append(out, f.Meta.Notices...)
		}
	}
	return out
}

// dataFieldRef finds ${__data.fields.name} in a panel's display names and links.
var dataFieldRef = regexp.MustCompile(`\$\{__data\.fields\.([A-Za-z_][A-Za-z0-9_]*)`)

// panelFieldRefs lists the frame fields a panel names: its filterFieldsByName transformations'
// names, its byName overrides and its ${__data.fields.x} references.
func panelFieldRefs(t *testing.T, tg stack.Target) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(stack.RepoRoot(), "dashboards", tg.File))
	require.NoError(t, err)
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	for _, pr := range d.Panels {
		var p struct {
			ID              int `json:"id"`
			Transformations []struct {
				ID      string `json:"id"`
				Options struct {
					Include struct {
						Names []string `json:"names"`
					} `json:"include"`
				} `json:"options"`
			} `json:"transformations"`
			FieldConfig struct {
				Overrides []struct {
					Matcher struct {
						ID      string `json:"id"`
						Options any    `json:"options"`
					} `json:"matcher"`
				} `json:"overrides"`
			} `json:"fieldConfig"`
		}
		require.NoError(t, json.Unmarshal(pr, &p))
		if p.ID != tg.PanelID {
			continue
		}
		var out []string
		for _, tr := range p.Transformations {
			if tr.ID == "filterFieldsByName" {
				out = append(out, tr.Options.Include.Names...)
			}
		}
		for _, o := range p.FieldConfig.Overrides {
			if name, ok := o.Matcher.Options.(string); ok && o.Matcher.ID == "byName" {
				out = append(out, name)
			}
		}
		for _, m := range dataFieldRef.FindAllStringSubmatch(string(pr), -1) {
			out = append(out, m[1])
		}
		return out
	}
	t.Fatalf("%s has no panel %d", tg.File, tg.PanelID)
	return nil
}

func hasField(fs data.Frames, name string) bool {
	for _, f := range fs {
		if f.Meta != nil && f.Meta.DataTopic == data.DataTopicAnnotations {
			continue // Grafana hands these to the panel as annotations, not as data
		}
		if _, i := f.FieldByName(name); i >= 0 {
			return true
		}
	}
	return false
}
