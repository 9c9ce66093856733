// Package tracetest holds what the tests of the trace sources share: a replay of a real
// backend's recorded answers, the record of what was sent to it (testdata/*_sent_spans.json of
// the testing package), the checks of requests read against that record, and a huge trace.
package tracetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
)

// Route answers one path with a recorded response: a file of testdata/, or Body when set.
type Route struct {
	Status int
	File   string
	Body   []byte
}

// Replay serves recorded responses of a real backend by path, and remembers the requests.
type Replay struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

// NewReplay starts a replay of routes by path, closed when the test ends.
func NewReplay(t *testing.T, routes map[string]Route) *Replay {
	t.Helper()
	r := &Replay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req)
		r.mu.Unlock()
		rt, ok := routes[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		body, err := rt.Body, error(nil)
		if body == nil {
			body, err = os.ReadFile(filepath.Join("testdata", rt.File))
		}
		if err != nil {
			t.Errorf("fixture: %v", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(rt.Status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(r.Close)
	return r
}

// Start starts a replay of routes and a source of it, built by newSource with opts.
func Start[S any](t *testing.T, routes map[string]Route, opts traces.Options,
	newSource func(*http.Client, string, traces.Options) (S, error)) (S, *Replay) {
	t.Helper()
	r := NewReplay(t, routes)
	s, err := newSource(r.Client(), r.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// Requests are the requests received so far.
func (r *Replay) Requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.seen...)
}

// Recorded is an answer of a live backend recorded with the query that got it: a file of
// testdata/ holding {"q": the query, "status": the HTTP status, "body": the answer, a JSON
// string when the backend answered text}.
type Recorded struct {
	Q      string          `json:"q"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// LoadRecorded reads a Recorded from a file of testdata/.
func LoadRecorded(t testing.TB, file string) Recorded {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var r Recorded
	if err := json.Unmarshal(b, &r); err != nil || r.Q == "" || r.Status == 0 || len(r.Body) == 0 {
		t.Fatalf("%s is not a recorded answer with its query, status and body: %v", file, err)
	}
	return r
}

// Route serves the answer as the backend sent it: text unquoted, JSON as it is.
func (r Recorded) Route() Route {
	var text string
	if json.Unmarshal(r.Body, &text) == nil {
		return Route{Status: r.Status, Body: []byte(text)}
	}
	return Route{Status: r.Status, Body: r.Body}
}

// SentSpan is one entry of a fixture's _sent_spans.json: what the recorder sent.
type SentSpan struct {
	TraceID   string  `json:"traceID"`
	SpanID    string  `json:"spanID"`
	RequestID string  `json:"requestID"`
	Start     string  `json:"start"`
	End       string  `json:"end"`
	TTFT      float64 `json:"ttft"`
	E2E       float64 `json:"e2e"`
	Parent    string  `json:"parentSpanID"`
}

// LoadSent maps request ids to what was sent, read from a file of testdata/.
func LoadSent(t *testing.T, file string) map[string]SentSpan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spans []SentSpan `json:"spans"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]SentSpan{}
	for _, s := range doc.Spans {
		out[s.RequestID] = s
	}
	return out
}

// MustTime parses an RFC 3339 time of a fixture.
func MustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// stages are the values the fixture recorder derives from a request's index i (from 0):
// see the testdata/README.md of the tempo and jaeger packages.
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

// CheckSent compares a request with what the recorder sent for it.
func CheckSent(t *testing.T, r traces.Request, sent map[string]SentSpan) {
	t.Helper()
	s, ok := sent[r.RequestID]
	if !ok {
		t.Errorf("request %q was never sent", r.RequestID)
		return
	}
	if r.TraceID != s.TraceID || r.SpanID != s.SpanID {
		t.Errorf("%s: ids %s/%s, sent %s/%s", r.RequestID, r.TraceID, r.SpanID, s.TraceID, s.SpanID)
	}
	if !r.Start.Equal(MustTime(t, s.Start)) || !r.End.Equal(MustTime(t, s.End)) {
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

// CheckStages compares the engine-clock stages with what the recorder sent.
func CheckStages(t *testing.T, r traces.Request) {
	t.Helper()
	want := recordedStages(t, r.RequestID)
	if r.Queue != want.queue || r.Prefill != want.prefill || r.Decode != want.decode || r.Inference != want.prefill+want.decode {
		t.Errorf("%s: queue %v prefill %v decode %v inference %v; sent %v %v %v %v", r.RequestID,
			r.Queue, r.Prefill, r.Decode, r.Inference, want.queue, want.prefill, want.decode, want.prefill+want.decode)
	}
}

// HugeTrace writes one trace in OTLP JSON (hex ids, as Jaeger does) with n gateway spans and
// one vLLM span, first or last.
func HugeTrace(n int, vllmFirst bool) string {
	const traceID = "35cda8f3cda64ae250a46b22235d5719"
	span := func(i int, name string) string {
		return fmt.Sprintf(`{"traceId":%q,"spanId":"%016x","name":%q,"startTimeUnixNano":"1795941725619000000","endTimeUnixNano":"1795941729169000000"}`,
			traceID, i+1, name)
	}
	vllmRS := `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}}]},"scopeSpans":[{"spans":[` +
		span(0, "llm_request") + `]}]}`
	gw := make([]string, n)
	for i := range gw {
		gw[i] = span(i+1, "POST /v1/completions")
	}
	gwRS := `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"llm-gateway"}}]},"scopeSpans":[{"spans":[` +
		strings.Join(gw, ",") + `]}]}`
	if vllmFirst {
		return `{"resourceSpans":[` + vllmRS + "," + gwRS + `]}`
	}
	return `{"resourceSpans":[` + gwRS + "," + vllmRS + `]}`
}

// CheckWhole compares the request of a by-id fixture, cmpl-0005 (the vLLM span beside the
// gateway's, with every attribute vLLM sets), with what the recorder sent.
func CheckWhole(t *testing.T, r traces.Request, sent map[string]SentSpan) {
	t.Helper()
	if r.RequestID != "cmpl-0005" {
		t.Fatalf("got request %q, want the vLLM span cmpl-0005 (not the gateway's)", r.RequestID)
	}
	CheckSent(t, r, sent)
	CheckStages(t, r)
	if r.Temperature != 0.7 || r.TopP != 0.95 || r.MaxTokens != 256 || r.Model != "facebook/opt-125m" || len(r.Missing()) != 0 {
		t.Errorf("request = %+v", r)
	}
}

// BodyClient answers every request with status and body, in process: the fuzzers' backend,
// which must answer whatever the fuzzer made up, and fast.
func BodyClient(status int, body []byte) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{}}, nil
	})}
}

// FuncClient answers every request with the status and body answer returns, in process: a
// backend for thousands of requests, whose test reads what was sent from the requests answer
// is given.
func FuncClient(answer func(*http.Request) (int, string)) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		status, body := answer(r)
		return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}}, nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
