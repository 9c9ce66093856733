package sim

import (
	"context"
	"fmt"
	"net"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// OTLP protocols.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http"
)

// instrumentingModule is the tracer name vLLM uses, which it also puts in the resource.
const instrumentingModule = "vllm.llm_engine"

// Exporter sends request spans to an OTLP endpoint (host:port, no TLS), as vLLM does with
// --otlp-traces-endpoint: one resource per instance, so service.instance.id joins the traces
// to the Prometheus instance label.
type Exporter struct {
	exp       *otlptrace.Exporter
	service   string
	spanModel bool
	pids      map[string]int
	batch     int
}

// batchSize bounds one OTLP request: Jaeger's and Tempo's default message limits are 4 MiB.
const batchSize = 512

// NewExporter connects to endpoint with protocol grpc or http. It fails within timeout when
// nothing listens there, rather than losing spans silently later.
func NewExporter(ctx context.Context, sc Scenario, endpoint, protocol string, timeout time.Duration) (*Exporter, error) {
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return nil, fmt.Errorf("OTLP endpoint %q: want host:port: %w", endpoint, err)
	}
	conn, err := net.DialTimeout("tcp", endpoint, timeout)
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %s is not reachable (is the collector or Jaeger running?): %w", endpoint, err)
	}
	conn.Close()
	var exp *otlptrace.Exporter
	switch protocol {
	case ProtocolGRPC, "":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure(), otlptracegrpc.WithTimeout(timeout))
	case ProtocolHTTP:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure(), otlptracehttp.WithTimeout(timeout))
	default:
		return nil, fmt.Errorf("OTLP protocol %q: want %s or %s", protocol, ProtocolGRPC, ProtocolHTTP)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", endpoint, err)
	}
	pids := map[string]int{}
	for i, in := range sc.Instances {
		pids[in.Address] = processID(sc.Seed, i)
	}
	return &Exporter{exp: exp, service: sc.serviceName(), spanModel: sc.spanModel(), pids: pids, batch: batchSize}, nil
}

// Export sends the spans, in batches, and returns the first error an endpoint reports.
func (x *Exporter) Export(ctx context.Context, spans []Span) error {
	byInstance := map[string][]Span{}
	var order []string
	for _, s := range spans {
		if _, ok := byInstance[s.Instance]; !ok {
			order = append(order, s.Instance)
		}
		byInstance[s.Instance] = append(byInstance[s.Instance], s)
	}
	for _, inst := range order {
		ro := x.readOnly(inst, byInstance[inst])
		for i := 0; i < len(ro); i += x.batch {
			if err := x.exp.ExportSpans(ctx, ro[i:min(i+x.batch, len(ro))]); err != nil {
				return fmt.Errorf("exporting spans of %s: %w", inst, err)
			}
		}
	}
	return nil
}

// Close flushes and closes the connection.
func (x *Exporter) Close(ctx context.Context) error { return x.exp.Shutdown(ctx) }

// ExportAll sends spans of sc to an OTLP/gRPC endpoint in one go: connect, export, flush and
// close, as a test bed or a backfill loads a trace backend once.
func ExportAll(ctx context.Context, sc Scenario, endpoint string, spans []Span, timeout time.Duration) error {
	x, err := NewExporter(ctx, sc, endpoint, ProtocolGRPC, timeout)
	if err != nil {
		return err
	}
	if err := x.Export(ctx, spans); err != nil {
		_ = x.Close(ctx)
		return err
	}
	return x.Close(ctx)
}

// readOnly builds SDK spans with the requests' own times and ids: a tracer provider whose
// processor keeps what ends, and whose id generator hands out the simulated ids.
func (x *Exporter) readOnly(instance string, spans []Span) []sdktrace.ReadOnlySpan {
	keep := &keeper{}
	ids := &fixedIDs{}
	res := resource.NewSchemaless(
		attribute.String(vllm.ResourceServiceName, x.service),
		attribute.String(vllm.ResourceInstanceID, instance),
		attribute.String(vllm.ResourceInstrumenting, instrumentingModule),
		attribute.Int(vllm.ResourceProcessID, x.pids[instance]),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(keep), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(ids), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tr := tp.Tracer(instrumentingModule)
	ctx := context.Background()
	for _, s := range spans {
		ids.trace, ids.span = trace.TraceID(s.TraceID), trace.SpanID(s.SpanID)
		attrs := []attribute.KeyValue{
			attribute.Float64(vllm.AttrTTFT, s.TTFT),
			attribute.Float64(vllm.AttrE2E, s.E2E),
			attribute.Float64(vllm.AttrQueue, s.Queue),
			attribute.Float64(vllm.AttrPrefill, s.Prefill),
			attribute.Float64(vllm.AttrDecode, s.Decode),
			attribute.Float64(vllm.AttrInference, s.Inference),
			attribute.Int(vllm.AttrPromptTokens, s.PromptTokens),
			attribute.Int(vllm.AttrOutputTokens, s.CompletionTokens),
			attribute.String(vllm.AttrRequestID, s.RequestID),
		}
		if s.Temperature != 0 {
			attrs = append(attrs, attribute.Float64(vllm.AttrTemperature, s.Temperature))
		}
		if s.TopP != 0 {
			attrs = append(attrs, attribute.Float64(vllm.AttrTopP, s.TopP))
		}
		if s.MaxTokens != 0 {
			attrs = append(attrs, attribute.Int(vllm.AttrMaxTokens, s.MaxTokens))
		}
		if x.spanModel {
			attrs = append(attrs, attribute.String(vllm.AttrResponseModel, s.Model))
		}
		_, span := tr.Start(ctx, vllm.DefaultSpanName, trace.WithTimestamp(s.Start),
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(s.End))
	}
	return keep.spans
}

type keeper struct{ spans []sdktrace.ReadOnlySpan }

func (k *keeper) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (k *keeper) OnEnd(s sdktrace.ReadOnlySpan)                   { k.spans = append(k.spans, s) }
func (k *keeper) Shutdown(context.Context) error                  { return nil }
func (k *keeper) ForceFlush(context.Context) error                { return nil }

// fixedIDs hands the SDK the ids the simulation chose, so a run's trace ids are reproducible
// and known to the caller before export.
type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func (f *fixedIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID)  { return f.trace, f.span }
func (f *fixedIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return f.span }
