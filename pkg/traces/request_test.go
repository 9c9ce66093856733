package traces

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func kv(key string, v any) *commonpb.KeyValue {
	var av *commonpb.AnyValue
	switch x := v.(type) {
	case string:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
	case float64:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case []string:
		arr := &commonpb.ArrayValue{}
		for _, s := range x {
			arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	}
	return &commonpb.KeyValue{Key: key, Value: av}
}

func TestNormalizeTraceID(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"full id is kept", "35cda8f3cda64ae250a46b22235d5719", "35cda8f3cda64ae250a46b22235d5719", nil},
		{"upper case is lowered", "35CDA8F3CDA64AE250A46B22235D5719", "35cda8f3cda64ae250a46b22235d5719", nil},
		{"Tempo's dropped leading zero is restored", "af7651916cd43dd8448eb211c80319c", "0af7651916cd43dd8448eb211c80319c", nil},
		{"64-bit id is left-padded", "a1b2c3d4e5f60718", "0000000000000000a1b2c3d4e5f60718", nil},
		{"surrounding space is ignored", " a1b2c3d4e5f60718\n", "0000000000000000a1b2c3d4e5f60718", nil},
		{"not hex", "not-a-trace-id", "", ErrInvalidTraceID},
		{"too long", strings.Repeat("a", 33), "", ErrInvalidTraceID},
		{"empty", "", "", ErrInvalidTraceID},
		{"all zeros", "0000", "", ErrInvalidTraceID},
		{"query injection", "abc?x=1", "", ErrInvalidTraceID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeTraceID(tt.in)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("NormalizeTraceID(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestNewRequestReadsCurrentV1Span(t *testing.T) {
	o := Options{}.WithDefaults()
	r := o.NewRequest(Span{Attributes: []*commonpb.KeyValue{
		kv(vllm.AttrQueue, 0.1), kv(vllm.AttrPrefill, 0.2), kv(vllm.AttrDecode, 0.3), kv(vllm.AttrInference, 0.5),
		kv(vllm.AttrTTFT, 0.31), kv(vllm.AttrE2E, 0.62), kv(vllm.AttrPromptTokens, 120), kv(vllm.AttrOutputTokens, 30),
		kv(vllm.AttrRequestID, "chatcmpl-1"), kv(vllm.AttrFinishReason, []string{"stop"}),
	}, Resource: []*commonpb.KeyValue{kv(vllm.ResourceServiceName, "vllm")}})
	got := []float64{r.Queue, r.Prefill, r.Decode, r.Inference, r.TTFT, r.E2E}
	if want := []float64{0.1, 0.2, 0.3, 0.5, 0.31, 0.62}; !slices.Equal(got, want) {
		t.Errorf("stages = %v, want %v", got, want)
	}
	if r.PromptTokens != 120 || r.OutputTokens != 30 || r.RequestID != "chatcmpl-1" || r.Service != "vllm" || r.FinishReason != "stop" {
		t.Errorf("request = %+v", r)
	}
	if r.IsV0() || len(r.Missing()) != 0 {
		t.Errorf("IsV0 = %v, Missing = %v; want a complete V1 span", r.IsV0(), r.Missing())
	}
	for _, f := range []Field{FieldTemperature, FieldTopP, FieldMaxTokens, FieldCachedTokens} {
		if r.Present.Has(f) {
			t.Errorf("field %d present, but the span does not set it", f)
		}
	}
	if r.Model != "" {
		t.Errorf("Model = %q; a V1 span has no model, the caller fills it", r.Model)
	}
}

func TestNewRequestReadsV0Span(t *testing.T) {
	o := Options{}.WithDefaults()
	r := o.NewRequest(Span{Attributes: []*commonpb.KeyValue{
		kv(vllm.AttrResponseModel, "facebook/opt-125m"), kv(vllm.AttrQueue, 0.05), kv(vllm.AttrTTFT, 0.4), kv(vllm.AttrE2E, 2.0),
		kv(vllm.AttrTimeInScheduler, 0.01), kv(vllm.AttrTimeInForward, 1.5), kv(vllm.AttrTimeInExecute, 1.6),
	}})
	if !r.IsV0() {
		t.Fatal("IsV0 = false for a span with V0 timings and no prefill/decode")
	}
	if len(r.Missing()) != 0 {
		t.Errorf("Missing = %v; V0 spans never have prefill/decode, so nothing is missing", r.Missing())
	}
	if r.Model != "facebook/opt-125m" || r.Scheduler != 0.01 || r.Forward != 1.5 || r.Execute != 1.6 {
		t.Errorf("request = %+v", r)
	}
	if !math.IsNaN(r.Prefill) || r.Present.Has(FieldPrefill) {
		t.Errorf("Prefill = %v, present %v; want NaN and absent", r.Prefill, r.Present.Has(FieldPrefill))
	}
}

func TestNewRequestReportsMissingLatencies(t *testing.T) {
	r := Options{}.WithDefaults().NewRequest(Span{Attributes: []*commonpb.KeyValue{
		kv(vllm.AttrRequestID, "cmpl-1"), kv(vllm.AttrTTFT, 0.5),
	}})
	want := []string{"queue", "prefill", "decode", "e2e"}
	if !slices.Equal(r.Missing(), want) {
		t.Errorf("Missing = %v, want %v", r.Missing(), want)
	}
	if r.TTFT != 0.5 || !math.IsNaN(r.E2E) {
		t.Errorf("TTFT = %v, E2E = %v; want 0.5 and NaN", r.TTFT, r.E2E)
	}
}

func TestNewRequestTreatsZeroAsPresent(t *testing.T) {
	r := Options{}.WithDefaults().NewRequest(Span{Attributes: []*commonpb.KeyValue{kv(vllm.AttrQueue, 0.0)}})
	if !r.Present.Has(FieldQueue) || r.Queue != 0 {
		t.Errorf("queue 0 read as present=%v value=%v", r.Present.Has(FieldQueue), r.Queue)
	}
}

func TestNewRequestAcceptsNumbersOfEitherType(t *testing.T) {
	r := Options{}.WithDefaults().NewRequest(Span{Attributes: []*commonpb.KeyValue{
		kv(vllm.AttrE2E, 2), kv(vllm.AttrPromptTokens, 64.0), kv(vllm.AttrTemperature, 1),
	}})
	if r.E2E != 2 || r.PromptTokens != 64 || r.Temperature != 1 || !r.Present.Has(FieldTemperature) {
		t.Errorf("request = %+v", r)
	}
}

func TestNewRequestInstanceAndModel(t *testing.T) {
	tests := []struct {
		name                 string
		opts                 Options
		span, resource       []*commonpb.KeyValue
		wantInstance, wantMd string
	}{
		{"service.instance.id by default", Options{},
			nil, []*commonpb.KeyValue{kv("service.instance.id", "10.0.0.1:8000"), kv("host.name", "gpu1")}, "10.0.0.1:8000", ""},
		{"span attribute before resource", Options{},
			[]*commonpb.KeyValue{kv("service.instance.id", "span-side")}, []*commonpb.KeyValue{kv("service.instance.id", "res-side")}, "span-side", ""},
		{"host.name with server.port when unset", Options{},
			nil, []*commonpb.KeyValue{kv("host.name", "gpu1"), kv("server.port", 8000)}, "gpu1:8000", ""},
		{"host.name alone without a port", Options{},
			nil, []*commonpb.KeyValue{kv("host.name", "gpu1")}, "gpu1", ""},
		{"configured attributes", Options{InstanceAttribute: "k8s.pod.name", ModelAttribute: "vllm.served_model"},
			nil, []*commonpb.KeyValue{kv("k8s.pod.name", "vllm-0"), kv("vllm.served_model", "llama")}, "vllm-0", "llama"},
		{"configured model absent falls back to gen_ai.response.model", Options{ModelAttribute: "vllm.served_model"},
			[]*commonpb.KeyValue{kv(vllm.AttrResponseModel, "opt")}, nil, "", "opt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.opts.WithDefaults().NewRequest(Span{Attributes: tt.span, Resource: tt.resource})
			if r.Instance != tt.wantInstance || r.Model != tt.wantMd {
				t.Errorf("instance, model = %q, %q; want %q, %q", r.Instance, r.Model, tt.wantInstance, tt.wantMd)
			}
		})
	}
}

func TestQueryKeep(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	base := Query{From: t0, To: t0.Add(time.Minute)}
	in := Request{Start: t0.Add(time.Second), Instance: "a:8000", Model: "opt", TTFT: 1.2, Present: 1 << FieldTTFT}
	with := func(f func(*Query)) Query { q := base; f(&q); return q }
	tests := []struct {
		name string
		q    Query
		r    Request
		want bool
	}{
		{"inside the range", base, in, true},
		{"before the range", base, Request{Start: t0.Add(-time.Second)}, false},
		{"after the range", base, Request{Start: t0.Add(2 * time.Minute)}, false},
		{"TTFT at the minimum", with(func(q *Query) { q.MinTTFT = 1.2 }), in, true},
		{"TTFT below the minimum", with(func(q *Query) { q.MinTTFT = 1.5 }), in, false},
		{"TTFT absent with a minimum", with(func(q *Query) { q.MinTTFT = 0.1 }), Request{Start: in.Start}, false},
		{"instance listed", with(func(q *Query) { q.Instances = []string{"b", "a:8000"} }), in, true},
		{"instance not listed", with(func(q *Query) { q.Instances = []string{"b"} }), in, false},
		{"model not listed", with(func(q *Query) { q.Models = []string{"llama"} }), in, false},
		{"a request without a model fails the model filter, as the backends match it", with(func(q *Query) { q.Models = []string{"llama"} }), Request{Start: in.Start}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.keep(tt.r); got != tt.want {
				t.Errorf("keep = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateRejectsBadQueries(t *testing.T) {
	o := Options{}.WithDefaults()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    Query
	}{
		{"no range", Query{}},
		{"end before start", Query{From: t0, To: t0.Add(-time.Second)}},
		{"negative limit", Query{From: t0, To: t0.Add(time.Hour), Limit: -1}},
		{"NaN TTFT", Query{From: t0, To: t0.Add(time.Hour), MinTTFT: math.NaN()}},
		{"negative TTFT", Query{From: t0, To: t0.Add(time.Hour), MinTTFT: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := o.Validate(tt.q); !errors.Is(err, ErrInvalidQuery) {
				t.Errorf("Validate = %v, want ErrInvalidQuery", err)
			}
		})
	}
}

func TestValidateBoundsTheLimit(t *testing.T) {
	o := Options{MaxLimit: 50}.WithDefaults()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ in, want int }{{0, 50}, {10, 10}, {5000, 50}} {
		q, err := o.Validate(Query{From: t0, To: t0.Add(time.Hour), Limit: tt.in})
		if err != nil || q.Limit != tt.want {
			t.Errorf("limit %d -> %d, %v; want %d", tt.in, q.Limit, err, tt.want)
		}
	}
}
