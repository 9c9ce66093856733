package traces

import (
	"regexp"
	"testing"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// FuzzNormalizeTraceID: an id is 32 lowercase hex digits once normalized, normalizing it again
// changes nothing, or it is refused: it never carries a path or query into a URL.
func FuzzNormalizeTraceID(f *testing.F) {
	for _, s := range []string{"0af7651916cd43dd8448eb211c80319c", "AF76", "../x", "abc?x=1", " 1 ", "0", "", "g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, err := NormalizeTraceID(id)
		if err != nil {
			return
		}
		if !hex32.MatchString(n) {
			t.Fatalf("%q normalized to %q", id, n)
		}
		if again, err := NormalizeTraceID(n); err != nil || again != n {
			t.Errorf("normalizing %q again gave %q, %v", n, again, err)
		}
	})
}

// FuzzDecodeTracesData: any OTLP JSON decodes or fails, never a panic.
func FuzzDecodeTracesData(f *testing.F) {
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","startTimeUnixNano":"1"}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"CvdlGRbNQ92ESOshHIAxnA=="}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		td, err := DecodeTracesData(b)
		if err == nil && td == nil {
			t.Error("no error and no data")
		}
	})
}
