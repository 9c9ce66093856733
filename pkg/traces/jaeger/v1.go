package jaeger

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// v1Answer is the JSON of Jaeger's /api/traces search (the query service's own model, which
// Jaeger v2 still serves): traces with their spans and the processes (resources) they ran in.
type v1Answer struct {
	Data   []v1Trace `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

type v1Trace struct {
	TraceID   string               `json:"traceID"`
	Spans     []v1Span             `json:"spans"`
	Processes map[string]v1Process `json:"processes"`
}

type v1Span struct {
	TraceID       string  `json:"traceID"`
	SpanID        string  `json:"spanID"`
	OperationName string  `json:"operationName"`
	StartTime     int64   `json:"startTime"` // microseconds since the epoch
	Duration      int64   `json:"duration"`  // microseconds
	Tags          []v1Tag `json:"tags"`
	ProcessID     string  `json:"processID"`
}

type v1Process struct {
	ServiceName string  `json:"serviceName"`
	Tags        []v1Tag `json:"tags"`
}

type v1Tag struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// keyValues turns Jaeger tags back into OTLP attributes, with the types Jaeger kept.
func keyValues(tags []v1Tag) ([]*commonpb.KeyValue, error) {
	out := make([]*commonpb.KeyValue, 0, len(tags))
	for _, t := range tags {
		v := &commonpb.AnyValue{}
		switch t.Type {
		case "string", "binary":
			var s string
			if err := json.Unmarshal(t.Value, &s); err != nil {
				return nil, fmt.Errorf("tag %q: %w", t.Key, err)
			}
			v.Value = &commonpb.AnyValue_StringValue{StringValue: s}
			if arr, ok := jsonArray(s); ok {
				v.Value = arr
			}
		case "bool":
			var b bool
			if err := json.Unmarshal(t.Value, &b); err != nil {
				return nil, fmt.Errorf("tag %q: %w", t.Key, err)
			}
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: b}
		case "int64":
			var n json.Number
			if err := json.Unmarshal(t.Value, &n); err != nil {
				return nil, fmt.Errorf("tag %q: %w", t.Key, err)
			}
			i, err := strconv.ParseInt(n.String(), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("tag %q: %w", t.Key, err)
			}
			v.Value = &commonpb.AnyValue_IntValue{IntValue: i}
		case "float64":
			var f float64
			if err := json.Unmarshal(t.Value, &f); err != nil {
				return nil, fmt.Errorf("tag %q: %w", t.Key, err)
			}
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: f}
		default:
			continue
		}
		out = append(out, &commonpb.KeyValue{Key: t.Key, Value: v})
	}
	return out, nil
}

// decodeV1 reads a /api/traces answer into requests: the spans named opts.SpanName of a
// process of service opts.ServiceName, at most MaxSpansPerTrace spans of each trace.
func (j *Source) decodeV1(body []byte, opts traces.Options, info *traces.SearchInfo) ([]traces.Request, error) {
	var ans v1Answer
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, j.b.Fail(http.StatusOK, "answered with something other than Jaeger's search JSON", err)
	}
	if len(ans.Errors) > 0 && len(ans.Data) == 0 {
		e := ans.Errors[0]
		return nil, j.b.Fail(e.Code, "rejected the search: "+e.Msg, nil)
	}
	info.Traces += len(ans.Data)
	var out []traces.Request
	for _, tr := range ans.Data {
		resources := make(map[string][]*commonpb.KeyValue, len(tr.Processes))
		services := make(map[string]string, len(tr.Processes))
		for id, p := range tr.Processes {
			kvs, err := keyValues(p.Tags)
			if err != nil {
				return nil, j.b.Fail(http.StatusOK, "answered with a process tag in an unknown form", err)
			}
			// Jaeger keeps service.name apart from the other resource attributes.
			resources[id] = append(kvs, &commonpb.KeyValue{Key: vllm.ResourceServiceName,
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: p.ServiceName}}})
			services[id] = p.ServiceName
		}
		for n, sp := range tr.Spans {
			if n >= opts.MaxSpansPerTrace {
				info.SpansSkipped += len(tr.Spans) - n
				break
			}
			if sp.OperationName != opts.SpanName || services[sp.ProcessID] != opts.ServiceName {
				continue
			}
			if sp.StartTime <= 0 || sp.Duration < 0 || sp.StartTime > math.MaxInt64/1000-sp.Duration {
				return nil, j.b.Fail(http.StatusOK, fmt.Sprintf("returned span %s of trace %s with a malformed time", sp.SpanID, tr.TraceID), nil)
			}
			kvs, err := keyValues(sp.Tags)
			if err != nil {
				return nil, j.b.Fail(http.StatusOK, "answered with a span tag in an unknown form", err)
			}
			id, err := traces.NormalizeTraceID(sp.TraceID)
			if err != nil {
				return nil, j.b.Fail(http.StatusOK, "returned a malformed trace id", err)
			}
			out = append(out, opts.NewRequest(traces.Span{
				TraceID: id, SpanID: sp.SpanID,
				Start:      time.UnixMicro(sp.StartTime).UTC(),
				End:        time.UnixMicro(sp.StartTime + sp.Duration).UTC(),
				Attributes: kvs, Resource: resources[sp.ProcessID],
			}))
		}
	}
	return out, nil
}

// jsonArray reads back an array attribute, which Jaeger's model keeps as its JSON text
// (["stop"] for gen_ai.response.finish_reasons): scalars only, else it stays a string.
func jsonArray(s string) (*commonpb.AnyValue_ArrayValue, bool) {
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	var elems []any
	if json.Unmarshal([]byte(s), &elems) != nil {
		return nil, false
	}
	arr := &commonpb.ArrayValue{}
	for _, e := range elems {
		v := &commonpb.AnyValue{}
		switch x := e.(type) {
		case string:
			v.Value = &commonpb.AnyValue_StringValue{StringValue: x}
		case bool:
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: x}
		case float64:
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: x}
		default:
			return nil, false
		}
		arr.Values = append(arr.Values, v)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: arr}, true
}
