package traces

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// stages are the values the fixture recorder derives from a request's index i (from 0):
// see testdata/README.md.
type stages struct {
	queue, ttft, prefill, decode float64
	prompt, output               int64
}

func recordedStages(t *testing.T, requestID string) stages {
	t.Helper()
	digits := requestID[strings.LastIndex(requestID, "-")+1:]
	n, err := strconv.Atoi(digits)
	if err != nil {
		t.Fatalf("request id %q has no index", requestID)
	}
	i := float64(n - 1)
	queue := 0.010 + 0.05*i
	ttft := 0.25 + 0.4*i
	return stages{queue: queue, ttft: ttft, prefill: ttft - queue, decode: 0.5 + 0.3*i,
		prompt: int64(100 + 37*(n-1)), output: int64(20 + 11*(n-1))}
}

// checkSent compares a request with what the recorder sent for it.
func checkSent(t *testing.T, r Request, sent map[string]sentSpan) {
	t.Helper()
	s, ok := sent[r.RequestID]
	if !ok {
		t.Errorf("request %q was never sent", r.RequestID)
		return
	}
	if r.TraceID != s.TraceID || r.SpanID != s.SpanID {
		t.Errorf("%s: ids %s/%s, sent %s/%s", r.RequestID, r.TraceID, r.SpanID, s.TraceID, s.SpanID)
	}
	if !r.Start.Equal(mustTime(t, s.Start)) || !r.End.Equal(mustTime(t, s.End)) {
		t.Errorf("%s: %s..%s, sent %s..%s", r.RequestID, r.Start, r.End, s.Start, s.End)
	}
	if r.TTFT != s.TTFT || r.E2E != s.E2E {
		t.Errorf("%s: ttft %v e2e %v, sent %v %v", r.RequestID, r.TTFT, r.E2E, s.TTFT, s.E2E)
	}
	want := recordedStages(t, r.RequestID)
	if r.PromptTokens != want.prompt || r.OutputTokens != want.output {
		t.Errorf("%s: tokens %d/%d, sent %d/%d", r.RequestID, r.PromptTokens, r.OutputTokens, want.prompt, want.output)
	}
}

// checkStages compares the engine-clock stages with what the recorder sent.
func checkStages(t *testing.T, r Request) {
	t.Helper()
	want := recordedStages(t, r.RequestID)
	if r.Queue != want.queue || r.Prefill != want.prefill || r.Decode != want.decode || r.Inference != want.prefill+want.decode {
		t.Errorf("%s: queue %v prefill %v decode %v inference %v; sent %v %v %v %v", r.RequestID,
			r.Queue, r.Prefill, r.Decode, r.Inference, want.queue, want.prefill, want.decode, want.prefill+want.decode)
	}
}
