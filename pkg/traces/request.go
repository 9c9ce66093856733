// Package traces is the model of vLLM requests read from their spans (one `llm_request` span
// per finished request): the Request, the Source interface that trace backends implement, and
// the decoding of OTLP JSON, in which both backends answer, into Requests. It does no I/O: the
// HTTP sources are its subpackages tempo (Grafana Tempo) and jaeger (Jaeger v2).
//
// A Request carries what its span carries and no more: latency attributes a span lacks are
// NaN and absent from Request.Present, so a caller can show what there is and say what is
// missing. vLLM's current (V1) spans have no model attribute; when Request.Model is empty the
// caller fills it from the metrics if the instance serves a single model. A search's
// SearchInfo says what its answer lacks (SearchInfo.Notices: a search that stopped at its
// limit, spans without latency attributes, spans of very large traces not read).
//
// vLLM's span vocabulary depends on its engine. Current (V1) spans always carry TTFT, e2e, time
// in queue, in prefill, in decode and in inference, prompt and completion tokens and the request
// id, and no model. Spans of the old V0 engine (vLLM 0.8 to 0.10 fell back to it whenever
// tracing was on) lack the prefill, decode and inference times and carry the time in the
// scheduler, in the model's forward pass and in model execution, and gen_ai.response.model. The
// metrics of the same engine say which (vllm.Detect), and so does a span already read
// (Request.Generation): Query.Generation passes it to a backend that returns only the
// attributes it is asked for (SpanAttributes).
package traces

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/internal/option"
	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Field names an optional value of a Request; Fields is a set of them.
type Field uint32

// Fields is a bit set of Field values.
type Fields uint32

// Optional values of a Request.
const (
	FieldQueue Field = iota
	FieldPrefill
	FieldDecode
	FieldInference
	FieldTTFT
	FieldE2E
	FieldPromptTokens
	FieldOutputTokens
	FieldCachedTokens
	FieldTemperature
	FieldTopP
	FieldMaxTokens
	FieldScheduler
	FieldForward
	FieldExecute
)

// Has reports whether f is in the set.
func (s Fields) Has(f Field) bool { return s&(1<<f) != 0 }

// Add puts f in the set.
func (s *Fields) Add(f Field) { *s |= 1 << f }

var fieldNames = map[Field]string{
	FieldQueue: "queue", FieldPrefill: "prefill", FieldDecode: "decode", FieldTTFT: "ttft", FieldE2E: "e2e",
}

// Request is one vLLM request, read from its span.
type Request struct {
	// TraceID is 32 lower-case hex digits, left-padded with zeros; SpanID is 16.
	TraceID, SpanID string
	// Start is the request's arrival, End its finish (the span's times).
	Start, End time.Time
	// Service is the span's service.name.
	Service string
	// Model is the configured model attribute, else gen_ai.response.model (V0 spans), else
	// empty: V1 spans carry no model, and the caller fills it from the metrics.
	Model string
	// Instance is the configured instance attribute (span, then resource), else host.name with
	// the server port when one is set, else empty.
	Instance string
	// RequestID is vLLM's gen_ai.request.id (chatcmpl-..., cmpl-...).
	RequestID string

	PromptTokens, OutputTokens, CachedTokens int64

	// Stage latencies in seconds, NaN when the span lacks them (see Present). TTFT and E2E run
	// on the front-end clock from arrival; Queue, Prefill, Decode and Inference on the engine
	// clock, so E2E is about, not exactly, Queue+Prefill+Decode.
	Queue, Prefill, Decode, Inference, TTFT, E2E float64
	// V0 engine spans lack Prefill, Decode and Inference and carry these instead (seconds, NaN
	// when absent): time in the scheduler, in the model's forward pass, in model execution.
	Scheduler, Forward, Execute float64

	// FinishReason is gen_ai.response.finish_reasons joined by commas, when set.
	FinishReason string
	// Sampling parameters, set only when the request set them (see Present).
	Temperature, TopP float64
	MaxTokens         int64

	// Present says which optional values the span carried.
	Present Fields
}

// latencyFields are the latency values an answer shows (the stages, TTFT and e2e), all of which
// every current vLLM span carries. Inference (prefill + decode) is read when a span has it, but
// no answer shows it, so a search need not ask for it (see SpanAttributes).
var latencyFields = []Field{FieldQueue, FieldPrefill, FieldDecode, FieldTTFT, FieldE2E}

// IsV0 reports whether the span came from vLLM's V0 engine: it has the V0 timing attributes
// and no prefill/decode split.
func (r *Request) IsV0() bool {
	v0 := r.Present.Has(FieldScheduler) || r.Present.Has(FieldForward) || r.Present.Has(FieldExecute)
	return v0 && !r.Present.Has(FieldPrefill) && !r.Present.Has(FieldDecode)
}

// Generation says whose span vocabulary the request's span carries: V0 (see IsV0), V1 when it
// has the prefill/decode split, GenerationNone when it has neither (it says nothing).
func (r *Request) Generation() vllm.Generation {
	switch {
	case r.IsV0():
		return vllm.GenerationV0
	case r.Present.Has(FieldPrefill) || r.Present.Has(FieldDecode):
		return vllm.GenerationV1
	}
	return vllm.GenerationNone
}

// Missing names the latency values an answer shows that the span lacks, among those its engine
// generation sets (V0 spans never have prefill and decode, so those are not reported for
// them). A non-empty answer deserves a notice: the request is shown with what it has.
func (r *Request) Missing() []string {
	var out []string
	v0 := r.IsV0()
	for _, f := range latencyFields {
		if v0 && (f == FieldPrefill || f == FieldDecode) {
			continue
		}
		if !r.Present.Has(f) {
			out = append(out, fieldNames[f])
		}
	}
	return out
}

// Options configure how spans are found and read; the zero value uses vLLM's defaults.
type Options struct {
	// ServiceName and SpanName identify vLLM spans (defaults "vllm" and "llm_request").
	ServiceName, SpanName string
	// InstanceAttribute is the span or resource attribute whose value equals the Prometheus
	// instance label (default service.instance.id).
	InstanceAttribute string
	// ModelAttribute is the span or resource attribute holding the model (default
	// gen_ai.response.model).
	ModelAttribute string
	// MaxBodyBytes bounds every answer read from the backend (default 32 MiB).
	MaxBodyBytes int64
	// MaxSpansPerTrace bounds the spans of one trace that are looked at (default 10000).
	MaxSpansPerTrace int
	// MaxLimit bounds Query.Limit (default 1000); DefaultLimit applies when it is 0 (100).
	MaxLimit, DefaultLimit int
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes     = 32 << 20
	DefaultMaxSpansPerTrace = 10000
	DefaultMaxLimit         = 1000
	DefaultLimit            = 100
)

// WithDefaults returns o with every unset option at its default.
func (o Options) WithDefaults() Options {
	o.ServiceName = cmp.Or(o.ServiceName, vllm.DefaultServiceName)
	o.SpanName = cmp.Or(o.SpanName, vllm.DefaultSpanName)
	o.InstanceAttribute = cmp.Or(o.InstanceAttribute, vllm.DefaultInstanceAttr)
	o.ModelAttribute = cmp.Or(o.ModelAttribute, vllm.DefaultModelAttr)
	o.MaxBodyBytes = option.PositiveOr(o.MaxBodyBytes, DefaultMaxBodyBytes)
	o.MaxSpansPerTrace = option.PositiveOr(o.MaxSpansPerTrace, DefaultMaxSpansPerTrace)
	o.MaxLimit = option.PositiveOr(o.MaxLimit, DefaultMaxLimit)
	o.DefaultLimit = option.PositiveOr(o.DefaultLimit, min(DefaultLimit, o.MaxLimit))
	return o
}

// SpanAttributes lists the span attributes an answer reads of a request (its stages, TTFT, e2e
// and token counts), among those that spans of generation g carry (vLLM's span vocabulary, see
// the package documentation): V1 spans the prefill/decode split; V0 spans the scheduler,
// forward and execute times instead, which make IsV0 true, so that the split is not reported
// missing, and the model (gen_ai.response.model). GenerationNone or GenerationMix (the spans'
// engine is not known, or a fleet mixes both): both vocabularies. The service, instance and
// model attributes the options name are the caller's to add: which of them a search must ask for
// depends on its conditions.
func SpanAttributes(g vllm.Generation) []string {
	out := []string{vllm.AttrTTFT, vllm.AttrE2E, vllm.AttrQueue}
	if g != vllm.GenerationV0 {
		out = append(out, vllm.AttrPrefill, vllm.AttrDecode)
	}
	if g != vllm.GenerationV1 {
		out = append(out, vllm.AttrTimeInScheduler, vllm.AttrTimeInForward, vllm.AttrTimeInExecute, vllm.AttrResponseModel)
	}
	return append(out, vllm.AttrPromptTokens, vllm.AttrOutputTokens)
}

// PortAttributes give the port of the serving process, for the host.name fallback of the
// instance (the current semantic-convention name first).
var PortAttributes = []string{"server.port", "net.host.port"}

// attrs looks attributes up in the span first, then in its resource.
type attrs struct {
	span, resource []*commonpb.KeyValue
}

func (a attrs) get(key string) *commonpb.AnyValue {
	for _, kvs := range [][]*commonpb.KeyValue{a.span, a.resource} {
		for _, kv := range kvs {
			if kv.GetKey() == key {
				return kv.GetValue()
			}
		}
	}
	return nil
}

func (a attrs) str(key string) string { return valueString(a.get(key)) }

// float reads a number whatever its OTLP type: exporters write 1.0 as an int in some languages.
func (a attrs) float(key string) (float64, bool) {
	v := a.get(key)
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, true
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	case *commonpb.AnyValue_StringValue:
		f, err := strconv.ParseFloat(x.StringValue, 64)
		return f, err == nil
	}
	return 0, false
}

func (a attrs) int(key string) (int64, bool) {
	v := a.get(key)
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return x.IntValue, true
	case *commonpb.AnyValue_DoubleValue:
		if x.DoubleValue == math.Trunc(x.DoubleValue) && math.Abs(x.DoubleValue) < 1<<53 {
			return int64(x.DoubleValue), true
		}
	case *commonpb.AnyValue_StringValue:
		n, err := strconv.ParseInt(x.StringValue, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueString(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// Span is what a backend gives about one span before its attributes are read.
type Span struct {
	// TraceID and SpanID are hex, with or without the leading zeros that NewRequest restores.
	TraceID, SpanID string
	Start, End      time.Time
	// Attributes are the span's own; Resource those of its resource, looked up after them.
	Attributes, Resource []*commonpb.KeyValue
}

// NewRequest reads a Request from a span, with the options' attribute names (see
// WithDefaults).
func (o Options) NewRequest(sp Span) Request {
	a := attrs{span: sp.Attributes, resource: sp.Resource}
	r := Request{
		TraceID: padHex(sp.TraceID, 32), SpanID: padHex(sp.SpanID, 16), Start: sp.Start, End: sp.End,
		Service:   a.str(vllm.ResourceServiceName),
		RequestID: a.str(vllm.AttrRequestID),
	}
	durations := []attrField[float64]{
		{vllm.AttrQueue, FieldQueue, &r.Queue},
		{vllm.AttrPrefill, FieldPrefill, &r.Prefill},
		{vllm.AttrDecode, FieldDecode, &r.Decode},
		{vllm.AttrInference, FieldInference, &r.Inference},
		{vllm.AttrTTFT, FieldTTFT, &r.TTFT},
		{vllm.AttrE2E, FieldE2E, &r.E2E},
		{vllm.AttrTimeInScheduler, FieldScheduler, &r.Scheduler},
		{vllm.AttrTimeInForward, FieldForward, &r.Forward},
		{vllm.AttrTimeInExecute, FieldExecute, &r.Execute},
	}
	for _, d := range durations {
		// A duration the span lacks is unknown, not zero seconds.
		*d.dst = math.NaN()
	}
	readAttributes(&r, a.float, durations)
	readAttributes(&r, a.int, []attrField[int64]{
		{vllm.AttrPromptTokens, FieldPromptTokens, &r.PromptTokens},
		{vllm.AttrOutputTokens, FieldOutputTokens, &r.OutputTokens},
		{vllm.AttrCachedTokens, FieldCachedTokens, &r.CachedTokens},
		{vllm.AttrMaxTokens, FieldMaxTokens, &r.MaxTokens},
	})
	readAttributes(&r, a.float, []attrField[float64]{
		{vllm.AttrTemperature, FieldTemperature, &r.Temperature},
		{vllm.AttrTopP, FieldTopP, &r.TopP},
	})
	r.FinishReason = a.str(vllm.AttrFinishReason)
	r.Model = a.str(o.ModelAttribute)
	if r.Model == "" {
		r.Model = a.str(vllm.AttrResponseModel)
	}
	r.Instance = o.instance(a)
	return r
}

func (o Options) instance(a attrs) string {
	if v := a.str(o.InstanceAttribute); v != "" {
		return v
	}
	host := a.str(vllm.ResourceHostName)
	if host == "" {
		return ""
	}
	for _, k := range PortAttributes {
		if p := a.str(k); p != "" {
			return host + ":" + p
		}
	}
	return host
}

// attrField is where a span attribute goes in a Request, and the field that says it was there.
type attrField[T any] struct {
	key string
	f   Field
	dst *T
}

// readAttributes copies each attribute the span carries (read with get) to its destination and
// marks its field present; an absent one leaves its destination as it was.
func readAttributes[T any](r *Request, get func(string) (T, bool), fields []attrField[T]) {
	for _, fl := range fields {
		if v, ok := get(fl.key); ok {
			*fl.dst = v
			r.Present.Add(fl.f)
		}
	}
}
