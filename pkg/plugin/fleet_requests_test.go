package plugin

import (
	"cmp"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
)

// Fleet bed: a simulated fleet over two hours, its metrics in a real Prometheus and one span
// in fleetSampling in a real Jaeger, as a sampling tracer would keep them.
const (
	fleetSize     = 12
	fleetRun      = 2 * time.Hour
	fleetSampling = 20
	// slowFactor defines the slow requests of the ground truth: those the simulator's fault
	// delayed (sim.Span.Fault), with a TTFT at least this many times the fleet's median TTFT
	// (over all spans the simulator kept).
	slowFactor = 10
)

type fleetBed struct {
	client *datasourcetest.TestPluginClient
	res    *sim.Result
	pc     backend.PluginContext
}

// newFleetBed builds the bed: about a minute on a busy machine, so the fleet tests share one.
func newFleetBed(t testing.TB) *fleetBed {
	t.Helper()
	var (
		theFleetBed *fleetBed
		fleetBedErr string
	)
	func() {
		sc, err := sim.Fleet(fleetSize)
		if err != nil {
			fleetBedErr = err.Error()
			return
		}
		start := time.Now().Truncate(time.Minute).Add(-fleetRun - 5*time.Minute)
		res, err := sim.Run(sc, start, fleetRun, simScrape, sim.WithSpanSampling(fleetSampling))
		if err != nil {
			fleetBedErr = err.Error()
			return
		}
		path := filepath.Join(t.TempDir(), "fleet.om")
		f, err := os.Create(path)
		if err == nil {
			err = res.WriteOpenMetrics(f)
			f.Close()
		}
		if err != nil {
			fleetBedErr = err.Error()
			return
		}
		prom := testbed.Prometheus(t, path)
		jg := testbed.Jaeger(t)
		ctx := context.Background()
		if err := sim.ExportAll(ctx, sc, jg.OTLPGRPC, res.Spans, 10*time.Second); err != nil {
			fleetBedErr = err.Error()
			return
		}
		// Jaeger stores spans after its batch processor flushes them, in the order they were
		// exported (instance by instance): wait for each instance's last span.
		src, err := jaeger.New(http.DefaultClient, jg.QueryURL, traces.Options{})
		if err != nil {
			fleetBedErr = err.Error()
			return
		}
		last := map[string]string{}
		for _, sp := range res.Spans {
			last[sp.Instance] = traceHex(sp.TraceID)
		}
		deadline := time.Now().Add(60 * time.Second)
		for _, id := range last {
			for {
				_, err := src.Get(ctx, id)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					fleetBedErr = "Jaeger does not serve every instance's last span after 60 s: " + err.Error()
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		theFleetBed = &fleetBed{client: grpcPlugin(t), res: res, pc: pluginContext(prom.URL, map[string]any{
			"scrapeInterval": simScrape.String(), "tracesBackend": "jaeger", "tracesUrl": jg.QueryURL, "tracesDatasourceUid": "jaeger-uid"})}
	}()
	if theFleetBed == nil {
		t.Fatalf("fleet bed: %s", fleetBedErr)
	}
	return theFleetBed
}

func (b *fleetBed) requests(t testing.TB, from, to time.Time, model map[string]any) (*data.Frame, string) {
	t.Helper()
	m := map[string]any{"queryType": "requests"}
	for k, v := range model {
		m[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := b.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: b.pc, Queries: []backend.DataQuery{rangeQuery("R", from, to, m)}})
	if err != nil {
		t.Fatalf("QueryData over gRPC: %v", err)
	}
	out := res.Responses["R"]
	if out.Error != nil {
		t.Fatalf("requests: %v", out.Error)
	}
	for _, f := range out.Frames {
		if f.Name == "requests" {
			exec := ""
			if f.Meta != nil {
				exec = f.Meta.ExecutedQueryString
			}
			return f, exec
		}
	}
	t.Fatalf("no requests frame")
	return nil, ""
}

// jaegerCalls counts the trace searches in an executed query string (one line each).
func jaegerCalls(exec string) int {
	n := 0
	for _, l := range strings.Split(exec, "\n") {
		if strings.Contains(l, "operation=") {
			n++
		}
	}
	return n
}

// TestFleetRequests checks the requests query, and the goodput format's sampled fields, at
// fleet scale against what the simulator injected (one bed for both: it takes minutes to build).
func TestFleetRequests(t *testing.T) {
	b := newFleetBed(t)
	t.Run("one instance over its fault window", func(t *testing.T) { fleetOneInstance(t, b) })
	t.Run("anomalousOnly finds the injected slow requests", func(t *testing.T) { fleetAnomalousOnly(t, b) })
	t.Run("the drill-down's explain queries", func(t *testing.T) { fleetDrillDown(t, b) })
	t.Run("goodput's sampled fields are the simulator's kept requests", func(t *testing.T) { fleetSampledGoodput(t, b) })
}

// fleetDrillDown: the request link names the answering data source; without a trace id the
// explain panels get an instruction, not an error; the annotation query answers the
// request's interval alone.
func fleetDrillDown(t *testing.T, b *fleetBed) {
	from, to := b.res.Start, b.res.Start.Add(fleetRun)
	f, _ := b.requests(t, from, to, map[string]any{"anomalousOnly": true, "limit": 5})
	if f.Rows() == 0 {
		t.Fatal("no request to drill into")
	}
	id, _ := f.FieldByName("trace_id")
	uid := b.pc.DataSourceInstanceSettings.UID
	if uid == "" || !slices.ContainsFunc(id.Config.Links, func(l data.DataLink) bool { return strings.Contains(l.URL, "var-datasource="+uid+"&") }) {
		t.Errorf("no link of %+v names the answering data source %q", id.Config.Links, uid)
	}
	explain := func(model map[string]any) backend.DataResponse {
		m := map[string]any{"queryType": "explain"}
		for k, v := range model {
			m[k] = v
		}
		res, err := b.client.QueryData(context.Background(), &backend.QueryDataRequest{PluginContext: b.pc, Queries: []backend.DataQuery{rangeQuery("E", from, to, m)}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Responses["E"]
	}
	empty := explain(map[string]any{"traceId": ""})
	if empty.Error != nil || len(empty.Frames) != 1 || empty.Frames[0].Meta == nil || len(empty.Frames[0].Meta.Notices) != 1 ||
		!strings.Contains(empty.Frames[0].Meta.Notices[0].Text, "click a trace id") {
		t.Errorf("explain without a trace id: %v, %d frames; want one frame with an instruction", empty.Error, len(empty.Frames))
	}
	ann := explain(map[string]any{"traceId": cellString(f, "trace_id", 0), "format": "annotation"})
	if ann.Error != nil || len(ann.Frames) != 1 || ann.Frames[0].Name != "request" || ann.Frames[0].Meta != nil {
		t.Errorf("explain annotation: %v, %d frames; want the request's interval alone, a plain frame as annotation queries read", ann.Error, len(ann.Frames))
	}
	t.Run("the answer reads as one explanation over the request's window", func(t *testing.T) {
		fleetExplainShape(t, explain(map[string]any{"traceId": cellString(f, "trace_id", 0)}))
	})
}

// fleetExplainShape checks what Explore shows of an explain answer asked over the whole run, as
// a trace view's link asks: the explanation and its stages as tables, the signals as one graph
// of the window around the request, and the request's interval as an annotation on it.
func fleetExplainShape(t *testing.T, r backend.DataResponse) {
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var names []string
	for _, f := range r.Frames {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "explanation,stages,explanation_details,signals,request" {
		t.Fatalf("frames %v, want explanation, stages, explanation_details, signals, request", names)
	}
	// Explore shows the first 20 columns of each table: the sentence comes first.
	if f := r.Frames[0].Fields[0]; f.Name != "explanation" || f.At(0) == "" {
		t.Errorf("the explanation's first field is %s %v, want the sentence", f.Name, f.At(0))
	}
	for _, f := range r.Frames {
		if len(f.Fields) > frames.MaxFields {
			t.Errorf("frame %s has %d fields, more than Explore shows", f.Name, len(f.Fields))
		}
	}
	mark := r.Frames[4]
	if mark.Meta == nil || mark.Meta.DataTopic != data.DataTopicAnnotations {
		t.Errorf("the request's interval is not an annotation: %+v", mark.Meta)
	}
	start, _ := mark.ConcreteAt(0, 0)
	end, _ := mark.ConcreteAt(1, 0)
	sig := r.Frames[3]
	if sig.Meta == nil || sig.Meta.Type != data.FrameTypeTimeSeriesWide || sig.Meta.PreferredVisualization != data.VisTypeGraph {
		t.Fatalf("signals frame meta %+v, want one wide time series for a graph", sig.Meta)
	}
	if sig.Rows() == 0 || len(sig.Fields) < 1+len(series.Joined) {
		t.Fatalf("signals: %d rows, %d fields; want the joined signals around the request", sig.Rows(), len(sig.Fields))
	}
	first, _ := sig.ConcreteAt(0, 0)
	last, _ := sig.ConcreteAt(0, sig.Rows()-1)
	lo, hi := start.(time.Time).Add(-plan.ExplainPad), end.(time.Time).Add(plan.ExplainPad)
	if first.(time.Time).Before(lo) || last.(time.Time).After(hi) || !first.(time.Time).Before(start.(time.Time)) || !last.(time.Time).After(end.(time.Time)) {
		t.Errorf("signals from %v to %v; want the request's %v–%v within %v either side", first, last, start, end, plan.ExplainPad)
	}
	for _, f := range sig.Fields[1:] {
		if f.Labels["instance"] == "" || f.Config == nil || f.Config.DisplayNameFromDS == "" {
			t.Errorf("signal field %s lacks its instance label or display name", f.Name)
		}
	}
}

func fleetOneInstance(t *testing.T, b *fleetBed) {
	for inst, rule := range sim.FleetFaulty(fleetSize) {
		t.Run(inst+" "+rule, func(t *testing.T) {
			// The fault window and the instance's spans in it, from the simulator.
			var from, to time.Time
			for _, s := range b.res.Spans {
				if s.Instance == inst && s.Fault != "" {
					if from.IsZero() {
						from = s.Start
					}
					to = s.Start
				}
			}
			want := map[string]bool{}
			for _, s := range b.res.Spans {
				if s.Instance == inst && !s.Start.Before(from) && !s.Start.After(to) {
					want[traceHex(s.TraceID)] = true
				}
			}
			const limit = 1000
			f, exec := b.requests(t, from, to, map[string]any{"instance": inst, "limit": limit})
			got := 0
			for i := range f.Rows() {
				if g := cellString(f, "instance", i); g != inst {
					t.Fatalf("row %d is of instance %q, want only %s", i, g, inst)
				}
				if want[cellString(f, "trace_id", i)] {
					got++
				}
			}
			if need := 0.9 * float64(min(len(want), limit)); float64(got) < need {
				t.Errorf("%d of the %d spans of %s in its fault window returned, want at least %.0f; notices: %s; %d searches",
					got, len(want), inst, need, noticeText(f), jaegerCalls(exec))
			}
		})
	}
}

func fleetAnomalousOnly(t *testing.T, b *fleetBed) {
	ttfts := make([]float64, len(b.res.Spans))
	for i, s := range b.res.Spans {
		ttfts[i] = s.TTFT
	}
	slices.Sort(ttfts)
	median := ttfts[len(ttfts)/2]
	slow := map[string]bool{}
	for _, s := range b.res.Spans {
		if s.Fault != "" && s.TTFT >= slowFactor*median {
			slow[traceHex(s.TraceID)] = true
		}
	}
	const limit = 100
	f, exec := b.requests(t, b.res.Start, b.res.Start.Add(fleetRun), map[string]any{"anomalousOnly": true, "limit": limit})
	found := 0
	for i := range f.Rows() {
		if slow[cellString(f, "trace_id", i)] {
			found++
		}
	}
	t.Logf("%d rows, %d of them among the %d injected slow requests (TTFT ≥ %d× the fleet median of %.3f s); %d trace searches",
		f.Rows(), found, len(slow), slowFactor, median, jaegerCalls(exec))
	if need := 0.8 * float64(min(len(slow), limit)); float64(found) < need {
		t.Errorf("%d injected slow requests among the %d rows, want at least %.0f", found, f.Rows(), need)
	}
	// The fleet's slowest requests, as Tempo's exact TTFT filter finds them.
	slowest := b.slowest(limit)
	held := slowestHeld(f, slowest)
	t.Logf("%d of the fleet's %d slowest TTFTs (%.1f s and more) are among the rows", held, len(slowest), slowest[len(slowest)-1].TTFT)
	if need := 0.8 * float64(len(slowest)); float64(held) < need {
		t.Errorf("%d of the fleet's %d slowest TTFTs among the rows, want at least %.0f", held, len(slowest), need)
	}
}

// slowest is the ground truth of the fleet's n slowest first tokens: the n spans of the
// simulation with the longest TTFT, as the simulator made them.
func (b *fleetBed) slowest(n int) []sim.Span {
	spans := slices.Clone(b.res.Spans)
	slices.SortFunc(spans, func(x, y sim.Span) int { return cmp.Compare(y.TTFT, x.TTFT) })
	return spans[:min(n, len(spans))]
}

// slowestHeld counts the spans of slowest among the rows of a requests frame.
func slowestHeld(f *data.Frame, slowest []sim.Span) int {
	rows := map[string]bool{}
	for i := range f.Rows() {
		rows[cellString(f, "trace_id", i)] = true
	}
	held := 0
	for _, s := range slowest {
		if rows[traceHex(s.TraceID)] {
			held++
		}
	}
	return held
}

// BenchmarkFleetRequests prints the wall time of a requests query over 2 h of a 12-instance
// fleet, its number of trace searches (backend calls) and the share of the fleet's slowest
// TTFTs (as many as the limit, from the simulator) among its rows.
func BenchmarkFleetRequests(b *testing.B) {
	bed := newFleetBed(b)
	for _, mode := range []struct {
		name  string
		model map[string]any
	}{
		{"default", map[string]any{"limit": 100}},
		{"anomalousOnly", map[string]any{"anomalousOnly": true, "limit": 100}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			calls, held := 0, 0
			slowest := bed.slowest(mode.model["limit"].(int))
			for b.Loop() {
				f, exec := bed.requests(b, bed.res.Start, bed.res.Start.Add(fleetRun), mode.model)
				calls, held = jaegerCalls(exec), slowestHeld(f, slowest)
			}
			b.ReportMetric(float64(calls), "searches/op")
			b.ReportMetric(float64(held)/float64(len(slowest)), "slowest-recall")
		})
	}
}
