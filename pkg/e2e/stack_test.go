package e2e_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/stack"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// TestProvisionedDashboardsAnswer runs every query of every provisioned dashboard through the
// plugin against a real Prometheus and a real Jaeger holding the kv_cache_saturated scenario
// (metrics and one span in five), with the dashboard's variables set as Grafana would set them:
// every panel answers without error, and the diagnosis panels show the injected finding.
func TestProvisionedDashboardsAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: simulates a scenario and starts Prometheus and Jaeger")
	}
	sc, err := sim.Lookup(sim.RuleKVCacheSaturated)
	require.NoError(t, err)
	res, err := sim.Run(sc, runStart, runFor, scrape, sim.WithSpanSampling(5))
	require.NoError(t, err)
	require.NotEmpty(t, res.Truth)
	truth := res.Truth[0]
	file := filepath.Join(t.TempDir(), "kv.om")
	require.NoError(t, res.WriteFile(file))
	prom := testbed.Prometheus(t, file)
	jaeger := testbed.Jaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, sim.ExportAll(ctx, sc, jaeger.OTLPGRPC, res.Spans, 10*time.Second))

	// The dashboards' current range: the fault's first forty minutes, with the faulty instance
	// selected, as an operator would look (the graphs' findings annotations draw only for a
	// selected instance).
	from := truth.Start.Truncate(time.Minute)
	to := from.Add(40 * time.Minute)
	traceID := slowestTrace(res.Spans, truth.Instance, from, to)
	vars := strings.NewReplacer(
		`"${datasource}"`, `"vllm"`, `"$instance"`, `"`+truth.Instance+`"`, `"$model"`, `""`,
		`"$traceId"`, `"`+traceID+`"`, `"$topk"`, `"5"`,
		`"$baselineFrom"`, `"`+runStart.Format(time.RFC3339)+`"`,
		`"$baselineTo"`, `"`+from.Add(-5*time.Minute).Format(time.RFC3339)+`"`,
	)
	// The provisioned data source's objectives, which the dashboards' SLOs rows read.
	slos, err := stack.ProvisionedSLOs("vllm")
	require.NoError(t, err)
	tp, pc := pluginFor(t, prom.URL, map[string]any{
		"tracesBackend": "jaeger", "tracesUrl": jaeger.QueryURL, "tracesDatasourceUid": "jaeger", "slos": slos,
	})
	waitForSpans(t, tp, pc, from, to)

	targets, err := stack.Targets(filepath.Join(stack.RepoRoot(), "dashboards"))
	require.NoError(t, err)
	ran := 0
	for _, tg := range targets {
		if tg.Datasource.Type != stack.PluginID && tg.Datasource.UID != "${datasource}" {
			continue
		}
		ran++
		t.Run(tg.File+"/"+tg.Panel+"/"+tg.RefID, func(t *testing.T) {
			raw := vars.Replace(string(tg.JSON))
			require.NotContains(t, raw, `"$`, "a template variable this test does not set")
			q, err := stack.DecodeQuery([]byte(raw))
			require.NoError(t, err)
			model := map[string]any{}
			require.NoError(t, json.Unmarshal([]byte(raw), &model))
			model["queryType"] = q.QueryType()
			resp := ask(t, tp, pc, query(tg.RefID, model, from, to, scrape))
			r := resp.Responses[tg.RefID]
			require.NoError(t, r.Error, "panel %q", tg.Panel)
			require.NotEmpty(t, r.Frames)
			// A findings query shows the injected finding unless it asks for other severities
			// (the dashboards' annotations draw one severity each).
			if dq, ok := q.(plugin.DiagnosisQuery); ok && (dq.Format == "" || dq.Format == plugin.FormatFindings) &&
				(len(dq.Severities) == 0 || slices.Contains(dq.Severities, truthSeverity(t, truth.Rule))) {
				assert.True(t, hasFinding(r.Frames[0], truth.Rule, truth.Instance),
					"panel %q should show %s on %s", tg.Panel, truth.Rule, truth.Instance)
			}
		})
	}
	assert.Greater(t, ran, 10, "the dashboards' plugin queries")
}

// truthSeverity is the catalog severity of an injected rule.
func truthSeverity(t *testing.T, rule string) diagnosis.Severity {
	t.Helper()
	rules, err := diagnosis.Rules([]string{rule}, nil)
	require.NoError(t, err)
	return rules[0].Severity
}

// slowestTrace is the trace id of the slowest request of an instance that started in a range.
func slowestTrace(spans []sim.Span, instance string, from, to time.Time) string {
	var best sim.Span
	for _, s := range spans {
		if s.Instance == instance && !s.Start.Before(from) && s.Start.Before(to) && s.E2E > best.E2E {
			best = s
		}
	}
	return hex.EncodeToString(best.TraceID[:])
}

// waitForSpans waits until the requests query sees spans: Jaeger stores them asynchronously.
func waitForSpans(t *testing.T, tp datasourcetest.TestPlugin, pc backend.PluginContext, from, to time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := ask(t, tp, pc, query("W", map[string]any{"queryType": "requests", "limit": 1}, from, to, scrape))
		if r := resp.Responses["W"]; r.Error == nil && len(r.Frames) > 0 && r.Frames[0].Rows() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Jaeger holds no vLLM spans of the range 30 s after they were sent")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func hasFinding(f *data.Frame, rule, instance string) bool {
	r, _ := f.FieldByName("rule")
	in, _ := f.FieldByName("instance")
	if r == nil || in == nil {
		return false
	}
	for i := 0; i < f.Rows(); i++ {
		if r.At(i) == rule && in.At(i) == instance {
			return true
		}
	}
	return false
}

// testProvisionedAlertRules evaluates each provisioned alert rule as Grafana would, inside its
// scenario's fault (see alertTime): the rule's query over its relative time range, reduce last, > 0.
// It fires on the faulty instance, and on no instance of the healthy scenario.
func testProvisionedAlertRules(t *testing.T, b *bed) {
	rules, err := stack.LoadAlertRules(filepath.Join(stack.RepoRoot(), "provisioning", "alerting", "vllm-rules.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, rules)
	for _, r := range rules {
		t.Run(r.Title, func(t *testing.T) {
			a := r.Data[0]
			raw, err := json.Marshal(a.Model)
			require.NoError(t, err)
			parsed, err := stack.DecodeRequestQuery(raw)
			require.NoError(t, err)
			require.IsType(t, plugin.DiagnosisQuery{}, parsed)
			q := parsed.(plugin.DiagnosisQuery)
			require.Len(t, q.Rules, 1)
			run := b.runs[jobOf(q.Rules[0], vllm.GenerationV1)]
			require.NotNil(t, run, "no scenario for rule %s", q.Rules[0])
			tr := run.truth[0]
			at := alertTime(tr)
			window := time.Duration(a.RelativeTimeRange.From-a.RelativeTimeRange.To) * time.Second
			ms, _ := a.Model["intervalMs"].(float64)
			interval := time.Duration(ms) * time.Millisecond
			fires := func(job string) map[string]bool {
				tp, pc := pluginFor(t, b.prom.URL, map[string]any{"labelMatchers": fmt.Sprintf(`{job=%q}`, job)})
				resp := ask(t, tp, pc, query(a.RefID, a.Model, at.Add(-window), at, interval))
				res := resp.Responses[a.RefID]
				require.NoError(t, res.Error)
				out := map[string]bool{}
				for _, f := range res.Frames {
					if len(f.Fields) < 2 || f.Fields[1].Len() == 0 {
						continue
					}
					if firesAsGrafanaKeeps(f, keepFiringFor(t, r)) {
						out[f.Fields[1].Labels["instance"]] = true
					}
				}
				return out
			}
			assert.Equal(t, map[string]bool{tr.Instance: true}, fires(run.job), "%s should fire on %s only", r.Title, tr.Instance)
			assert.Empty(t, fires(jobOf("healthy", vllm.GenerationV1)), "%s fires on the healthy scenario", r.Title)
			// At the fault's end its run has lasted at least `for`: Grafana fires and renders.
			checkSummaryNamesTheValue(t, b, r, run.job, tr.Instance, tr.End.Truncate(time.Second))
		})
	}
}

// keepFiringFor is a provisioned rule's keepFiringFor, zero when it has none.
func keepFiringFor(t *testing.T, r stack.AlertRule) time.Duration {
	if r.KeepFiringFor == "" {
		return 0
	}
	d, err := model.ParseDuration(r.KeepFiringFor)
	require.NoError(t, err, "keepFiringFor of %s", r.Title)
	return time.Duration(d)
}

// firesAsGrafanaKeeps says whether a provisioned rule (reduce "last" with mode dropNN, threshold
// above 0) fires on an alert series frame: its last value, or one within keepFiringFor before the
// end, since Grafana keeps a firing alert firing that long after its condition lapses.
func firesAsGrafanaKeeps(f *data.Frame, keep time.Duration) bool {
	if len(f.Fields) < 2 || f.Fields[1].Len() == 0 {
		return false
	}
	times, v := f.Fields[0], f.Fields[1]
	end := times.At(times.Len() - 1).(time.Time)
	last := true
	for i := v.Len() - 1; i >= 0; i-- {
		x, ok := v.ConcreteAt(i)
		if !ok || math.IsNaN(x.(float64)) {
			continue
		}
		if !last && end.Sub(times.At(i).(time.Time)) > keep {
			return false
		}
		if x.(float64) > 0 {
			return true
		}
		last = false
	}
	return false
}

// lastNonNaN is Grafana's reduce "last" with mode dropNN.
func lastNonNaN(f *data.Field) float64 {
	for i := f.Len() - 1; i >= 0; i-- {
		v, ok := f.ConcreteAt(i)
		if !ok {
			continue
		}
		if x, ok := v.(float64); ok && !math.IsNaN(x) {
			return x
		}
	}
	return math.NaN()
}
