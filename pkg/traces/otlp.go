package traces

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"github.com/seed/vllm-datasource/pkg/vllm"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// NormalizeTraceID returns id as 32 lower-case hex digits. Backends drop leading zeros (Tempo's
// search) or print 64-bit ids in 16 digits (Jaeger's v1 API), so ids are compared and joined
// only in this form. An id that is not 1 to 32 hex digits, or is all zeros, is ErrInvalidTraceID.
func NormalizeTraceID(id string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(id))
	if s == "" || len(s) > 32 {
		return "", fmt.Errorf("%w %q: want 1 to 32 hexadecimal digits", ErrInvalidTraceID, clip.To(id, 64))
	}
	if _, err := hex.DecodeString(strings.Repeat("0", len(s)%2) + s); err != nil {
		return "", fmt.Errorf("%w %q: want hexadecimal digits only", ErrInvalidTraceID, clip.To(id, 64))
	}
	if strings.Trim(s, "0") == "" {
		return "", fmt.Errorf("%w %q: an all-zero id is not a trace", ErrInvalidTraceID, id)
	}
	return padHex(s, 32), nil
}

// padHex lower-cases a hex id and left-pads it with zeros to n digits.
func padHex(id string, n int) string {
	s := strings.ToLower(id)
	if len(s) < n {
		s = strings.Repeat("0", n-len(s)) + s
	}
	return s
}

// idKeys are the OTLP fields that hold trace and span ids (in spans and their links).
var idKeys = [][]byte{[]byte(`"traceId"`), []byte(`"spanId"`), []byte(`"parentSpanId"`)}

// hexIDsToBase64 rewrites OTLP id fields written in hex to base64. Jaeger writes ids in hex
// where protojson's mapping of bytes fields is base64 (Tempo follows the mapping). 16 and 32
// hex digits cannot be mistaken for base64 ids: base64 of 8 or 16 bytes has 12 or 24
// characters. A key inside a string value cannot match: its quotes are escaped. A scan, not
// a regular expression: this runs over answers of up to MaxBodyBytes.
func hexIDsToBase64(b []byte) []byte {
	var out []byte
	done := 0
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte(`Id"`))
		if k < 0 {
			break
		}
		keyEnd := i + k + 3
		i = keyEnd
		if !slices.ContainsFunc(idKeys, func(key []byte) bool { return bytes.HasSuffix(b[:keyEnd], key) }) {
			continue
		}
		p := skipSpace(b, keyEnd)
		if p >= len(b) || b[p] != ':' {
			continue
		}
		p = skipSpace(b, p+1)
		if p >= len(b) || b[p] != '"' {
			continue
		}
		q := p + 1
		for q < len(b) && isHex(b[q]) {
			q++
		}
		if q >= len(b) || b[q] != '"' || (q-p-1 != 16 && q-p-1 != 32) {
			continue
		}
		raw, _ := hex.DecodeString(string(b[p+1 : q]))
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[done:p+1]...)
		out = base64.StdEncoding.AppendEncode(out, raw)
		done = q
		i = q
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

var otlpJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// DecodeTracesData decodes OTLP JSON with ids in hex or base64.
func DecodeTracesData(b []byte) (*tracepb.TracesData, error) {
	td := &tracepb.TracesData{}
	if err := otlpJSON.Unmarshal(hexIDsToBase64(b), td); err != nil {
		return nil, err
	}
	return td, nil
}

// DecodeAnyValue decodes one OTLP attribute value written in OTLP JSON.
func DecodeAnyValue(b []byte) (*commonpb.AnyValue, error) {
	v := &commonpb.AnyValue{}
	if err := otlpJSON.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

// WalkStats counts what walks over OTLP spans saw and left out; one value may add up several
// walks (the chunks of one answer).
type WalkStats struct {
	// SpansSkipped counts spans beyond Options.MaxSpansPerTrace of their trace.
	SpansSkipped int
	// perTrace counts the spans seen of each trace.
	perTrace map[string]int
}

// Traces is the number of traces seen.
func (st *WalkStats) Traces() int { return len(st.perTrace) }

// Requests returns the vLLM spans of td: the configured span name in a resource of the
// configured service. At most MaxSpansPerTrace spans of each trace are looked at.
func (o Options) Requests(td *tracepb.TracesData, st *WalkStats) []Request {
	if st.perTrace == nil {
		st.perTrace = map[string]int{}
	}
	var out []Request
	for _, rs := range td.GetResourceSpans() {
		resAttrs := rs.GetResource().GetAttributes()
		service := attrs{resource: resAttrs}.str(vllm.ResourceServiceName)
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				tid := hex.EncodeToString(sp.GetTraceId())
				st.perTrace[tid]++
				if st.perTrace[tid] > o.MaxSpansPerTrace {
					st.SpansSkipped++
					continue
				}
				if service != o.ServiceName || sp.GetName() != o.SpanName {
					continue
				}
				out = append(out, o.NewRequest(Span{
					TraceID:    tid,
					SpanID:     hex.EncodeToString(sp.GetSpanId()),
					Start:      unixNano(sp.GetStartTimeUnixNano()),
					End:        unixNano(sp.GetEndTimeUnixNano()),
					Attributes: sp.GetAttributes(),
					Resource:   resAttrs,
				}))
			}
		}
	}
	return out
}

// unixNano converts OTLP's fixed64 nanoseconds; the JSON string was parsed as an integer by
// protojson, never through a float, so nanoseconds survive.
func unixNano(ns uint64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns)).UTC()
}
