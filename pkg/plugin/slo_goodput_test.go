package plugin

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// fleetSampledGoodput checks the goodput format's sampled fields on the fleet bed (12
// instances, one request span in fleetSampling in a real Jaeger) against the simulator's own
// records of the requests it kept spans of.
func fleetSampledGoodput(t *testing.T, b *fleetBed) {
	// The fleet's objectives, and availability: its status rows count each instance's served
	// requests, which the sampled share is checked against with the bounds.
	var settings map[string]any
	if err := json.Unmarshal(b.pc.DataSourceInstanceSettings.JSONData, &settings); err != nil {
		t.Fatal(err)
	}
	settings["slos"] = append(append([]map[string]any(nil), fleetSLOs...),
		map[string]any{"name": "up", "indicator": "availability", "objective": 0.99, "window": "7d"})
	pc := pluginContext(b.pc.DataSourceInstanceSettings.URL, settings)
	from, to := b.res.Start, b.res.Start.Add(fleetRun)
	ask := func(format string) data.Frames {
		ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
		defer cancel()
		r, err := b.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc,
			Queries: []backend.DataQuery{rangeQuery("G", from, to, map[string]any{"queryType": "slo", "format": format})}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Responses["G"].Error != nil {
			t.Fatalf("%s: %v", format, r.Responses["G"].Error)
		}
		return r.Responses["G"].Frames
	}
	goodput, status := ask("goodput"), ask("status")[0]
	for _, line := range strings.Split(goodput[0].Meta.ExecutedQueryString, "\n") {
		if strings.Contains(line, "sampled request span(s)") {
			t.Log(line)
		}
	}
	served := map[string]float64{}
	for i := range status.Rows() {
		if cellString(status, "slo", i) == "up" {
			served[cellString(status, "instance", i)] = cellFloat(status, "good", i)
		}
	}
	checked := 0
	for _, f := range goodput {
		low, _ := f.FieldByName("goodput_low")
		instance := low.Labels["instance"]
		if instance == slo.Fleet {
			continue
		}
		checked++
		times := f.Fields[0]
		step := times.At(1).(time.Time).Sub(times.At(0).(time.Time))
		// Each point counts the requests that finished in the step ending at it.
		first, last := times.At(0).(time.Time).Add(-step), times.At(f.Rows()-1).(time.Time)
		var good, spans, sumLow, sumHigh float64
		for i := range f.Rows() {
			n := cellFloat(f, "sampled_spans", i)
			if n > 0 {
				good += cellFloat(f, "sampled_share", i) * n
			}
			spans += n
			if l := cellFloat(f, "goodput_low", i); !math.IsNaN(l) {
				sumLow, sumHigh = sumLow+l*step.Seconds(), sumHigh+cellFloat(f, "goodput_high", i)*step.Seconds()
			}
		}
		wantGood, wantAll := injectedGoodput(b.res, instance, first, last)
		t.Logf("%s: %v of %v sampled requests met every objective (simulator: %d of %d); bounds [%.0f, %.0f] of %.0f served",
			instance, math.Round(good), spans, wantGood, wantAll, sumLow, sumHigh, served[instance])
		if spans != float64(wantAll) || math.Round(good) != float64(wantGood) {
			t.Errorf("%s: %v of %v spans met every objective, the simulator's kept requests that finished from %s to %s: %d of %d",
				instance, good, spans, first.Format(time.TimeOnly), last.Format(time.TimeOnly), wantGood, wantAll)
			continue
		}
		// The sampled share estimates the served requests' joint share: a sample of `spans`
		// of them (a hash of each request keeps one in fleetSampling, whatever it met), so its
		// standard error is at most sqrt(p(1 − p)/spans); three of them, plus the 1% of the
		// requests by which the bounds themselves may miss (TestFleetSLO), is the tolerance.
		p := good / spans
		n := served[instance]
		tol := 3*n*math.Sqrt(p*(1-p)/spans) + 0.01*n
		if est := p * n; est < sumLow-tol || est > sumHigh+tol {
			t.Errorf("%s: sampled goodput %.0f requests (%.4f of %.0f), outside the bounds [%.0f, %.0f] ± %.0f", instance, est, p, n, sumLow, sumHigh, tol)
		}
	}
	if checked != fleetSize {
		t.Errorf("%d instance series, want %d", checked, fleetSize)
	}
	notices := goodput[0].Meta.Notices
	var texts []string
	for _, n := range notices {
		texts = append(texts, n.Text)
	}
	if all := strings.Join(texts, "\n"); !strings.Contains(all, "sampled_share is the share") {
		t.Errorf("notices %q do not say what the sampled share is", all)
	}
}

// The goodput format answers its bounds whatever the trace backend: without one, unreachable
// (a closed port), or holding no span of the range, with a notice saying why the sampled
// fields are missing or empty.
func TestGoodputAnswersItsBoundsWithoutSpans(t *testing.T) {
	e := newEnv(t)
	empty := testbed.Jaeger(t)
	closed := "http://" + freeAddr(t) // closed as soon as it was found free: nothing listens there
	for _, c := range []struct {
		name    string
		traces  map[string]any
		sampled bool
		notice  []string
	}{
		{"no trace backend", nil, false, []string{"No trace backend is configured", "tracesBackend"}},
		{"Jaeger unreachable", map[string]any{"tracesBackend": "jaeger", "tracesUrl": closed}, false,
			[]string{"could not be read from Jaeger", "connection refused", "bounded from the metrics alone"}},
		{"Tempo unreachable", map[string]any{"tracesBackend": "tempo", "tracesUrl": closed}, false,
			[]string{"could not be read from Tempo", "connection refused"}},
		{"a trace backend without spans of the range", map[string]any{"tracesBackend": "jaeger", "tracesUrl": empty.QueryURL}, true,
			[]string{"sampled_share is the share"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			settings := map[string]any{"slos": []map[string]any{
				{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}}}
			for k, v := range c.traces {
				settings[k] = v
			}
			res := e.query(t, pluginContext(e.v1.URL, settings), e.dataQuery("G", map[string]any{"queryType": "slo", "format": "goodput"}))
			fs := okResponse(t, res, "G").Frames
			answered := 0
			for _, f := range fs {
				low, _ := f.FieldByName("goodput_low")
				spans, _ := f.FieldByName("sampled_spans")
				if low == nil || (spans != nil) != c.sampled {
					t.Fatalf("fields %v: want the bounds, and the sampled fields %v", f.Fields, c.sampled)
				}
				for i := range f.Rows() {
					if !math.IsNaN(low.At(i).(float64)) {
						answered++
					}
					if spans != nil && spans.At(i).(float64) != 0 {
						t.Errorf("%v spans at step %d of an empty trace backend", spans.At(i), i)
					}
				}
			}
			if answered == 0 {
				t.Errorf("no step of %d frames has goodput bounds", len(fs))
			}
			all := strings.Join(notices(fs), "\n")
			for _, want := range c.notice {
				if !strings.Contains(all, want) {
					t.Errorf("notices %q do not say %q", all, want)
				}
			}
		})
	}
}
