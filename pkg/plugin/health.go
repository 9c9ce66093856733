package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// CheckHealth says what the data source found: Prometheus reachable, which vLLM metric
// generation it holds, how many instances and models, and the trace backend's state.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	if d.settingsErr != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "Settings: " + d.settingsErr.Error()}, nil
	}
	// Over everything Prometheus holds: vLLM data older than the check window is said to be
	// old below, not missing.
	det, err := d.prom.Detect(ctx, time.Time{}, time.Time{})
	if err != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError,
			Message: fmt.Sprintf("Prometheus at %s: %v. Check the URL, the network path from Grafana, and the auth settings.", redacted(d.settings.PrometheusURL), err)}, nil
	}
	if det.Generation == vllm.GenerationNone {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError,
			Message: fmt.Sprintf("Prometheus at %s is reachable but holds no vLLM metrics (vllm:*)%s. Check that it scrapes vLLM's /metrics endpoint and that vLLM does not run with --disable-log-stats (which turns its metrics off).", redacted(d.settings.PrometheusURL), matchersNote(d.settings.LabelMatchers))}, nil
	}
	// Prometheus and the trace backend are looked at over the same window.
	end := time.Now()
	start := end.Add(-traces.CheckWindow)
	window := traces.InCheckWindow()
	instances, err := d.prom.Instances(ctx, "", start, end)
	if err != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: err.Error()}, nil
	}
	models, err := d.prom.Models(ctx, "", start, end)
	if err != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: err.Error()}, nil
	}
	msg := fmt.Sprintf("Prometheus reachable: %s metric names (%d vLLM series names), %d vLLM instance(s) and %d model(s) %s.",
		generationName(det.Generation), det.Names(), len(instances), len(models), window)
	status := backend.HealthStatusOk
	if len(instances) == 0 {
		msg += " No instance reported vllm:num_requests_running " + window + ": the data is older, or scraping stopped."
	}
	if tr := d.tracesHealth(ctx); tr != "" {
		msg += " " + tr
	}
	if d.settings.SLOsErr != nil {
		// The other queries work on; only the slo queries need the objectives.
		msg = "Settings: " + d.settings.SLOsErr.Error() + ". " + msg
		status = backend.HealthStatusError
	}
	return &backend.CheckHealthResult{Status: status, Message: msg}, nil
}

func generationName(g vllm.Generation) string {
	switch g {
	case vllm.GenerationV0:
		return "the old V0-engine"
	case vllm.GenerationV1:
		return "current (V1-engine)"
	default:
		return "a mix of V0 and V1"
	}
}

func matchersNote(ms []*labels.Matcher) string {
	if len(ms) == 0 {
		return ""
	}
	printed := make([]string, len(ms))
	for i, m := range ms {
		printed[i] = m.String()
	}
	return " matching {" + strings.Join(printed, ", ") + "}"
}

// tracesHealth describes the trace backend: whether it answers and holds vLLM spans. A trace
// backend that is down does not fail the check: signals and diagnosis work without it.
func (d *Datasource) tracesHealth(ctx context.Context) string {
	if d.traces == nil {
		return "No trace backend configured: the requests and explain queries need Tempo or Jaeger."
	}
	h, err := d.traces.Check(ctx)
	if err != nil {
		return "Trace backend: " + err.Error() + ". The requests and explain queries fail until it answers; signals and diagnosis work without it."
	}
	return h.Message + "."
}
