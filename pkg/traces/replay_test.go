package traces

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// route answers one path with a recorded response.
type route struct {
	status int
	file   string
}

// replay serves recorded responses of a real backend by path, and remembers the requests.
type replay struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newReplay(t *testing.T, routes map[string]route) *replay {
	t.Helper()
	r := &replay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req)
		r.mu.Unlock()
		rt, ok := routes[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		body, err := os.ReadFile(filepath.Join("testdata", rt.file))
		if err != nil {
			t.Errorf("fixture: %v", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(rt.status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *replay) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.seen...)
}

// sentSpan is one entry of a fixture's _sent_spans.json: what the recorder sent.
type sentSpan struct {
	TraceID   string  `json:"traceID"`
	SpanID    string  `json:"spanID"`
	RequestID string  `json:"requestID"`
	Start     string  `json:"start"`
	End       string  `json:"end"`
	TTFT      float64 `json:"ttft"`
	E2E       float64 `json:"e2e"`
	Parent    string  `json:"parentSpanID"`
}

// loadSent maps request ids to what was sent.
func loadSent(t *testing.T, file string) map[string]sentSpan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spans []sentSpan `json:"spans"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]sentSpan{}
	for _, s := range doc.Spans {
		out[s.RequestID] = s
	}
	return out
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
