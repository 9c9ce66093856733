package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/seed/vllm-datasource/pkg/stack"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// sloBenchFleet is the fleet size the slo query is measured on.
const sloBenchFleet = 50

// BenchmarkSLOQuery measures the slo query over 2 hours of a simulated fleet of 50 instances
// (the provisioned objectives, each format a sub-benchmark) through the built plugin binary,
// spoken to over gRPC as Grafana does, against the PromQL it issued, read back from
// Prometheus's query log and sent at once by a plain client (client_golang, which decodes the
// answers), and against the same queries with their answers only read (the wire floor). It
// reports both ratios (sums over the iterations; each iteration's ratio to the client is
// printed) and the number of PromQL queries.
func BenchmarkSLOQuery(b *testing.B) {
	f := fleetFor(b, sloBenchFleet)
	proc := testbed.PluginBinary(b, pluginPackage)
	raw, err := stack.ProvisionedSLOs("vllm")
	if err != nil {
		b.Fatal(err)
	}
	jsonData, err := json.Marshal(map[string]any{"slos": raw})
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"status", "attribution", "burn", "budget", "goodput"} {
		b.Run("format="+format, func(b *testing.B) { benchSLOQuery(b, f, proc, jsonData, format) })
	}
}

func benchSLOQuery(b *testing.B, f *benchFleet, proc *testbed.PluginProcess, jsonData []byte, format string) {
	client, err := promapi.NewClient(promapi.Config{Address: f.prom.URL})
	if err != nil {
		b.Fatal(err)
	}
	api := v1.NewAPI(client)
	to := f.start.Add(benchSpan)
	q := query("S", map[string]any{"queryType": "slo", "format": format}, to.Add(-2*time.Hour), to, scrape)
	pc := backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
		UID: fmt.Sprintf("slo-%d-%s", f.n, format), Name: "vLLM", URL: f.prom.URL, JSONData: jsonData, Updated: time.Now(),
	}}
	ask := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		resp, err := proc.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{q}})
		if err != nil {
			b.Fatal(err)
		}
		if r := resp.Responses["S"]; r.Error != nil || len(r.Frames) == 0 {
			b.Fatalf("slo %s: %v, %d frames", format, r.Error, len(r.Frames))
		}
	}
	// One warm-up, so that generation detection is not measured.
	ask()
	_, off := queriesSince(b, f.queryLog, 0)

	t := timeAgainstFloor(b, f, api, pc, off, ask)
	fmt.Printf("slo %s, fleet N=%d: ratio of each of %d iterations: %s\n", format, f.n, b.N, strings.Join(t.ratios, " "))
	t.report(b)
}
