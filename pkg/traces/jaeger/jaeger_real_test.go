package jaeger

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// sentSpec is one span to send: the request it should read back as, and its resource.
type sentSpec struct {
	name     string
	service  string
	spanName string
	resource []attribute.KeyValue
	want     traces.Request
}

// spanAttributes writes a Request's present values under vLLM's attribute keys, as vLLM does.
func spanAttributes(r traces.Request) []attribute.KeyValue {
	var kvs []attribute.KeyValue
	if r.RequestID != "" {
		kvs = append(kvs, attribute.String(vllm.AttrRequestID, r.RequestID))
	}
	if r.Model != "" {
		kvs = append(kvs, attribute.String(vllm.AttrResponseModel, r.Model))
	}
	if r.FinishReason != "" {
		kvs = append(kvs, attribute.StringSlice(vllm.AttrFinishReason, []string{r.FinishReason}))
	}
	floats := map[traces.Field]struct {
		key string
		v   float64
	}{
		traces.FieldQueue: {vllm.AttrQueue, r.Queue}, traces.FieldPrefill: {vllm.AttrPrefill, r.Prefill},
		traces.FieldDecode: {vllm.AttrDecode, r.Decode}, traces.FieldInference: {vllm.AttrInference, r.Inference},
		traces.FieldTTFT: {vllm.AttrTTFT, r.TTFT}, traces.FieldE2E: {vllm.AttrE2E, r.E2E},
		traces.FieldScheduler: {vllm.AttrTimeInScheduler, r.Scheduler}, traces.FieldForward: {vllm.AttrTimeInForward, r.Forward},
		traces.FieldExecute: {vllm.AttrTimeInExecute, r.Execute}, traces.FieldTemperature: {vllm.AttrTemperature, r.Temperature},
		traces.FieldTopP: {vllm.AttrTopP, r.TopP},
	}
	ints := map[traces.Field]struct {
		key string
		v   int64
	}{
		traces.FieldPromptTokens: {vllm.AttrPromptTokens, r.PromptTokens}, traces.FieldOutputTokens: {vllm.AttrOutputTokens, r.OutputTokens},
		traces.FieldCachedTokens: {vllm.AttrCachedTokens, r.CachedTokens}, traces.FieldMaxTokens: {vllm.AttrMaxTokens, r.MaxTokens},
	}
	for f, a := range floats {
		if r.Present.Has(f) {
			kvs = append(kvs, attribute.Float64(a.key, a.v))
		}
	}
	for f, a := range ints {
		if r.Present.Has(f) {
			kvs = append(kvs, attribute.Int64(a.key, a.v))
		}
	}
	return kvs
}

// sendSpans sends each spec as its own trace through the OTel SDK's OTLP/gRPC exporter, and
// fills in the ids and times it sent.
func sendSpans(t *testing.T, endpoint string, specs []sentSpec) {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-2 * time.Minute).Truncate(time.Millisecond)
	for i := range specs {
		s := &specs[i]
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", s.service)}, s.resource...)...)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
		start := base.Add(time.Duration(i) * 5 * time.Second)
		dur := 1500 * time.Millisecond
		if s.want.Present.Has(traces.FieldE2E) {
			dur = time.Duration(s.want.E2E * float64(time.Second))
		}
		_, span := tp.Tracer("vllm.llm_engine").Start(ctx, s.spanName, trace.WithTimestamp(start),
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(spanAttributes(s.want)...))
		span.End(trace.WithTimestamp(start.Add(dur)))
		sc := span.SpanContext()
		s.want.TraceID, s.want.SpanID = sc.TraceID().String(), sc.SpanID().String()
		s.want.Start, s.want.End, s.want.Service = start.UTC(), start.Add(dur).UTC(), s.service
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// present builds a Fields set.
func present(fs ...traces.Field) traces.Fields {
	var s traces.Fields
	for _, f := range fs {
		s.Add(f)
	}
	return s
}

// nanFill sets the latencies a request lacks to NaN, as decoding does.
func nanFill(r traces.Request) traces.Request {
	for f, p := range map[traces.Field]*float64{traces.FieldQueue: &r.Queue, traces.FieldPrefill: &r.Prefill, traces.FieldDecode: &r.Decode,
		traces.FieldInference: &r.Inference, traces.FieldTTFT: &r.TTFT, traces.FieldE2E: &r.E2E, traces.FieldScheduler: &r.Scheduler,
		traces.FieldForward: &r.Forward, traces.FieldExecute: &r.Execute} {
		if !r.Present.Has(f) {
			*p = math.NaN()
		}
	}
	return r
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func sameRequest(a, b traces.Request) bool {
	return a.TraceID == b.TraceID && a.SpanID == b.SpanID && a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Service == b.Service && a.Model == b.Model && a.Instance == b.Instance && a.RequestID == b.RequestID &&
		a.PromptTokens == b.PromptTokens && a.OutputTokens == b.OutputTokens && a.CachedTokens == b.CachedTokens &&
		sameFloat(a.Queue, b.Queue) && sameFloat(a.Prefill, b.Prefill) && sameFloat(a.Decode, b.Decode) &&
		sameFloat(a.Inference, b.Inference) && sameFloat(a.TTFT, b.TTFT) && sameFloat(a.E2E, b.E2E) &&
		sameFloat(a.Scheduler, b.Scheduler) && sameFloat(a.Forward, b.Forward) && sameFloat(a.Execute, b.Execute) &&
		a.FinishReason == b.FinishReason && a.Temperature == b.Temperature && a.TopP == b.TopP &&
		a.MaxTokens == b.MaxTokens && a.Present == b.Present
}

func realSpecs() []sentSpec {
	v1 := present(traces.FieldQueue, traces.FieldPrefill, traces.FieldDecode, traces.FieldInference, traces.FieldTTFT, traces.FieldE2E, traces.FieldPromptTokens, traces.FieldOutputTokens)
	return []sentSpec{
		{name: "current V1 span", service: "vllm", spanName: "llm_request",
			resource: []attribute.KeyValue{attribute.String("service.instance.id", "10.0.0.1:8000")},
			want: traces.Request{RequestID: "chatcmpl-a", Instance: "10.0.0.1:8000", Queue: 0.012, Prefill: 0.238, Decode: 1.1,
				Inference: 1.338, TTFT: 0.25, E2E: 1.35, PromptTokens: 512, OutputTokens: 128, Present: v1}},
		{name: "V1 span with sampling parameters and the host.name fallback", service: "vllm", spanName: "llm_request",
			resource: []attribute.KeyValue{attribute.String("host.name", "gpu2"), attribute.Int("server.port", 8001)},
			want: traces.Request{RequestID: "cmpl-b", Instance: "gpu2:8001", Queue: 1.2, Prefill: 1.3, Decode: 0.9, Inference: 2.2,
				TTFT: 2.5, E2E: 3.4, PromptTokens: 4000, OutputTokens: 64, CachedTokens: 3072, Temperature: 0.7, TopP: 0.95,
				MaxTokens: 256, FinishReason: "length",
				Present: v1 | present(traces.FieldCachedTokens, traces.FieldTemperature, traces.FieldTopP, traces.FieldMaxTokens)}},
		{name: "V0 engine span", service: "vllm", spanName: "llm_request",
			want: traces.Request{RequestID: "cmpl-v0", Model: "facebook/opt-125m", Queue: 0.05, TTFT: 0.4, E2E: 2.0, Scheduler: 0.01,
				Forward: 1.5, Execute: 1.6, PromptTokens: 100, OutputTokens: 20,
				Present: present(traces.FieldQueue, traces.FieldTTFT, traces.FieldE2E, traces.FieldScheduler, traces.FieldForward, traces.FieldExecute, traces.FieldPromptTokens, traces.FieldOutputTokens)}},
		{name: "span without latency attributes", service: "vllm", spanName: "llm_request",
			want: traces.Request{RequestID: "cmpl-bare"}},
		{name: "another service's span", service: "llm-gateway", spanName: "POST /v1/completions",
			want: traces.Request{E2E: 1, Present: present(traces.FieldE2E)}},
	}
}

func TestRealJaeger(t *testing.T) {
	jaeger := testbed.Jaeger(t)
	specs := realSpecs()
	sendSpans(t, jaeger.OTLPGRPC, specs)
	src, err := New(&http.Client{Timeout: 10 * time.Second}, jaeger.QueryURL, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vllmSpecs := specs[:4]
	q := traces.Query{From: time.Now().Add(-10 * time.Minute), To: time.Now()}

	// Jaeger stores spans after its batch processor flushes them: wait for all to be there.
	var reqs []traces.Request
	deadline := time.Now().Add(20 * time.Second)
	for len(reqs) < len(vllmSpecs) && time.Now().Before(deadline) {
		if reqs, _, err = src.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	t.Run("search reads every sent request whole", func(t *testing.T) {
		if len(reqs) != len(vllmSpecs) {
			t.Fatalf("got %d requests, want %d", len(reqs), len(vllmSpecs))
		}
		byID := map[string]traces.Request{}
		for _, r := range reqs {
			byID[r.TraceID] = r
		}
		for _, s := range vllmSpecs {
			want := nanFill(s.want)
			if got := byID[want.TraceID]; !sameRequest(got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", s.name, got, want)
			}
		}
	})
	t.Run("get reads every sent request whole", func(t *testing.T) {
		for _, s := range vllmSpecs {
			got, err := src.Get(ctx, s.want.TraceID)
			if want := nanFill(s.want); err != nil || !sameRequest(got, want) {
				t.Errorf("%s: %v\n got %+v\nwant %+v", s.name, err, got, want)
			}
		}
	})
	t.Run("span without latencies is returned and reported", func(t *testing.T) {
		got, err := src.Get(ctx, specs[3].want.TraceID)
		if err != nil || len(got.Missing()) != len((&traces.Request{}).Missing()) {
			t.Errorf("Missing = %v, %v; want every latency", got.Missing(), err)
		}
	})
	t.Run("minimum TTFT", func(t *testing.T) {
		q := q
		q.MinTTFT = 2
		got, _, err := src.Search(ctx, q)
		if err != nil || len(got) != 1 || got[0].RequestID != "cmpl-b" {
			t.Errorf("got %v, %v; want only cmpl-b (TTFT 2.5)", got, err)
		}
	})
	t.Run("instance filter", func(t *testing.T) {
		q := q
		q.Instances = []string{"gpu2:8001"}
		got, _, err := src.Search(ctx, q)
		if err != nil || len(got) != 1 || got[0].RequestID != "cmpl-b" {
			t.Errorf("got %v, %v; want only cmpl-b", got, err)
		}
	})
	t.Run("instance filter on the resource attribute service.instance.id", func(t *testing.T) {
		q := q
		q.Instances = []string{"10.0.0.1:8000"}
		q.Limit = 1
		got, info, err := src.Search(ctx, q)
		if err != nil || len(got) != 1 || got[0].RequestID != "chatcmpl-a" {
			t.Errorf("got %v, %v; want only chatcmpl-a (sent %s)", got, err, info.Query)
		}
	})
	t.Run("several instances", func(t *testing.T) {
		q := q
		q.Instances = []string{"10.0.0.1:8000", "gpu2:8001", "nowhere:1"}
		got, _, err := src.Search(ctx, q)
		if err != nil || len(got) != 2 {
			t.Errorf("got %v, %v; want chatcmpl-a and cmpl-b", got, err)
		}
	})
	t.Run("another service's trace is not a vLLM request", func(t *testing.T) {
		_, err := src.Get(ctx, specs[4].want.TraceID)
		if !errors.Is(err, traces.ErrNotVLLM) {
			t.Errorf("err = %v, want ErrNotVLLM", err)
		}
	})
	t.Run("unknown trace", func(t *testing.T) {
		_, err := src.Get(ctx, "0123456789abcdef0123456789abcdef")
		if !errors.Is(err, traces.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("check finds vLLM spans", func(t *testing.T) {
		h, err := src.Check(ctx)
		if err != nil || !h.VLLMSpans {
			t.Errorf("Check = %+v, %v", h, err)
		}
	})
	t.Run("check on an unused service name finds none", func(t *testing.T) {
		other, err := New(&http.Client{Timeout: 10 * time.Second}, jaeger.QueryURL, traces.Options{ServiceName: "vllm-nobody"})
		if err != nil {
			t.Fatal(err)
		}
		h, err := other.Check(ctx)
		if err != nil || h.VLLMSpans {
			t.Errorf("Check = %+v, %v", h, err)
		}
	})
}
