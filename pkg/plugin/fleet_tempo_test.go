package plugin

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/tempo"
)

// TestFleetRequestsOnLiveTempo runs TestFleetRequests's checks with the fleet's spans in a live
// Tempo, which cannot run where CI runs: set VLLM_DIAG_TEMPO to its HTTP API (such as
// http://127.0.0.1:3200) and VLLM_DIAG_TEMPO_OTLP to its OTLP gRPC receiver (127.0.0.1:4317).
// The spans are sent with their simulated times (the last two hours), under fresh trace ids at
// each run, so the Tempo may hold others.
func TestFleetRequestsOnLiveTempo(t *testing.T) {
	tempoURL, otlp := os.Getenv("VLLM_DIAG_TEMPO"), os.Getenv("VLLM_DIAG_TEMPO_OTLP")
	if tempoURL == "" || otlp == "" {
		t.Skip("no live Tempo: set VLLM_DIAG_TEMPO (its HTTP API) and VLLM_DIAG_TEMPO_OTLP (its OTLP gRPC host:port)")
	}
	sc, err := sim.Fleet(fleetSize)
	if err != nil {
		t.Fatal(err)
	}
	// The seed makes the trace ids: a new one per run keeps earlier runs' spans apart.
	sc.Seed = uint64(time.Now().UnixNano())
	start := time.Now().Truncate(time.Minute).Add(-fleetRun - 5*time.Minute)
	res, err := sim.Run(sc, start, fleetRun, simScrape, sim.WithSpanSampling(fleetSampling))
	if err != nil {
		t.Fatal(err)
	}
	prom := simPrometheus(t, res)
	ctx := context.Background()
	if err := sim.ExportAll(ctx, sc, otlp, res.Spans, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	src, err := tempo.New(http.DefaultClient, tempoURL, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}
	for _, sp := range res.Spans {
		last[sp.Instance] = traceHex(sp.TraceID)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for inst, id := range last {
		for {
			_, err := src.Get(ctx, id)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Tempo does not serve %s's last span after 2 min: %v", inst, err)
			}
			time.Sleep(time.Second)
		}
	}
	b := &fleetBed{client: grpcPlugin(t), res: res, pc: pluginContext(prom.URL, map[string]any{
		"scrapeInterval": simScrape.String(), "tracesBackend": "tempo", "tracesUrl": tempoURL, "tracesDatasourceUid": "tempo-uid"})}
	t.Run("one instance over its fault window", func(t *testing.T) { fleetOneInstance(t, b) })
	t.Run("anomalousOnly finds the injected slow requests", func(t *testing.T) { fleetAnomalousOnly(t, b) })
	t.Run("the drill-down's explain queries", func(t *testing.T) { fleetDrillDown(t, b) })
}
