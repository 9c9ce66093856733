package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// faultTimeout is the data source timeout (jsonData.timeout, seconds) of every fault case;
// the stalled backends answer after stall, so only the setting, applied, makes them fail. It
// leaves the healthy neighbour query time to answer from the real Prometheus under the race
// detector on a loaded machine (1 s did not, in CI).
const (
	faultTimeout = 3
	stall        = 8 * time.Second
)

// fakeJaeger serves a Jaeger query API whose answers h writes; the healthy one answers n vLLM
// request spans of serverA spread over the env's range.
func fakeJaeger(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// healthyJaeger answers /api/traces searches with n vLLM spans of serverA within [from, to]
// (fewer when limit asks for fewer, as Jaeger does), and a by-id read (API v3) with the first.
func healthyJaeger(from, to time.Time, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v3/traces/") {
			_, _ = io.WriteString(w, jaegerChunk(from, to, 1))
			return
		}
		k := n
		if limit, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && limit < k {
			k = limit
		}
		_, _ = io.WriteString(w, jaegerSearch(from, to, k))
	}
}

// jaegerSearch is a /api/traces answer of n vLLM spans, one trace each, evenly spread over
// the range, in the query service's own JSON model.
func jaegerSearch(from, to time.Time, n int) string {
	traces := make([]string, n)
	gap := to.Sub(from) / time.Duration(n+1)
	for i := range traces {
		start := from.Add(gap * time.Duration(i+1))
		tags := []string{
			v1Tag(vllm.AttrTTFT, "float64", "0.3"), v1Tag(vllm.AttrQueue, "float64", "0.05"), v1Tag(vllm.AttrPrefill, "float64", "0.25"),
			v1Tag(vllm.AttrDecode, "float64", "1.7"), v1Tag(vllm.AttrInference, "float64", "1.95"), v1Tag(vllm.AttrE2E, "float64", "2"),
			v1Tag(vllm.AttrPromptTokens, "int64", "512"), v1Tag(vllm.AttrOutputTokens, "int64", "128"),
			v1Tag(vllm.AttrResponseModel, "string", strconv.Quote(serverA.model)),
		}
		traces[i] = fmt.Sprintf(`{"traceID":%q,"spans":[{"traceID":%q,"spanID":"%016x","operationName":%q,"startTime":%d,"duration":2000000,"tags":[%s],"processID":"p1"}],`+
			`"processes":{"p1":{"serviceName":%q,"tags":[%s]}}}`,
			spanTraceID(i), spanTraceID(i), i+1, vllm.DefaultSpanName, start.UnixMicro(), strings.Join(tags, ","),
			vllm.DefaultServiceName, v1Tag(vllm.ResourceInstanceID, "string", strconv.Quote(serverA.instance)))
	}
	return `{"data":[` + strings.Join(traces, ",") + `],"total":0,"limit":0,"offset":0,"errors":null}`
}

func v1Tag(k, typ, value string) string {
	return fmt.Sprintf(`{"key":%q,"type":%q,"value":%s}`, k, typ, value)
}

// spanTraceID is the trace id of the i-th generated span.
func spanTraceID(i int) string { return fmt.Sprintf("%032x", i+1) }

// jaegerChunk is one {"result": TracesData} chunk of n vLLM spans, evenly spread over the range.
func jaegerChunk(from, to time.Time, n int) string {
	spans := make([]string, n)
	gap := to.Sub(from) / time.Duration(n+1)
	for i := range spans {
		start := from.Add(gap * time.Duration(i+1))
		end := start.Add(2 * time.Second)
		attrs := []string{
			dbl(vllm.AttrTTFT, 0.3), dbl(vllm.AttrQueue, 0.05), dbl(vllm.AttrPrefill, 0.25), dbl(vllm.AttrDecode, 1.7),
			dbl(vllm.AttrInference, 1.95), dbl(vllm.AttrE2E, 2), integer(vllm.AttrPromptTokens, 512), integer(vllm.AttrOutputTokens, 128),
			str(vllm.AttrResponseModel, serverA.model),
		}
		spans[i] = fmt.Sprintf(`{"traceId":%q,"spanId":"%016x","name":%q,"kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s]}`,
			spanTraceID(i), i+1, vllm.DefaultSpanName, start.UnixNano(), end.UnixNano(), strings.Join(attrs, ","))
	}
	return `{"result":{"resourceSpans":[{"resource":{"attributes":[` + str(vllm.ResourceServiceName, vllm.DefaultServiceName) + "," +
		str(vllm.ResourceInstanceID, serverA.instance) + `]},"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}}`
}

func dbl(k string, v float64) string {
	return fmt.Sprintf(`{"key":%q,"value":{"doubleValue":%g}}`, k, v)
}
func integer(k string, v int) string {
	return fmt.Sprintf(`{"key":%q,"value":{"intValue":"%d"}}`, k, v)
}
func str(k, v string) string { return fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, k, v) }

// stalled answers after stall, unless the caller gave up first.
func stalled(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(stall):
			next(w, r)
		}
	}
}

// status answers code with body.
func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// truncated promises more than it sends, then drops the connection.
func truncated(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)+1000))
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// resetConn resets the connection (TCP RST) without an answer.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// resetFirst resets the first connection, then hands to next: one reset, retried once, answers.
func resetFirst(next http.HandlerFunc) http.HandlerFunc {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			resetConn(w)
			return
		}
		next(w, r)
	}
}

// hugeTrace streams a trace answer of about size bytes: one vLLM span and gateway spans.
func hugeTrace(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"result":{"resourceSpans":[{"resource":{"attributes":[`+str(vllm.ResourceServiceName, "gateway")+`]},"scopeSpans":[{"spans":[`)
		one := `{"traceId":"0000000000000000000000000000000a","spanId":"00000000000000aa","name":"POST /v1/completions","startTimeUnixNano":"1","endTimeUnixNano":"2"}`
		for written := 0; written < size; written += len(one) + 1 {
			if written > 0 {
				_, _ = io.WriteString(w, ",")
			}
			if _, err := io.WriteString(w, one); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `]}]}]}}`)
	}
}

// declaredTrace declares a trace answer of size bytes, sends its first bytes and holds the rest
// until the caller gives up: only the declared length can fail it within the fault timeout.
func declaredTrace(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = io.WriteString(w, `{"result":{"resourceSpans":[`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// byID answers the by-id reads with h and the searches as healthy does.
func byID(h http.HandlerFunc) func(http.HandlerFunc) http.HandlerFunc {
	return func(healthy http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/v3/traces/") {
				h(w, r)
				return
			}
			healthy(w, r)
		}
	}
}

// promFault is a Prometheus in front of the env's v1 server whose range queries for
// kv_cache_usage_perc h answers, the others passed through.
func promFault(h http.HandlerFunc) func(*testing.T, *env) string {
	return func(t *testing.T, e *env) string {
		return faultyProm(t, e.v1.URL, "kv_cache_usage_perc", func(w http.ResponseWriter, r *http.Request, _ http.Handler) { h(w, r) })
	}
}

// promRewrite passes kv_cache_usage_perc range queries to the real Prometheus and rewrites its
// JSON answer with edit.
func promRewrite(edit func(map[string]any)) func(*testing.T, *env) string {
	return func(t *testing.T, e *env) string {
		return faultyProm(t, e.v1.URL, "kv_cache_usage_perc", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			rec := httptest.NewRecorder()
			r.Header.Del("Accept-Encoding") // an answer to edit, not gzip
			next.ServeHTTP(rec, r)
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			edit(body)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(body)
		})
	}
}

// whole replaces the whole Prometheus with h.
func whole(h http.HandlerFunc) func(*testing.T, *env) string {
	return func(t *testing.T, _ *env) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

func nothingListens(t *testing.T, _ *env) string { return "http://" + freeAddr(t) }

// Secret markers: every secure field of the data source holds one, and no answer, error,
// notice, health message, resource answer or log line may show it.
const (
	markerBasicAuth    = "MARKER-basicAuthPassword-5f1e"
	markerHeader       = "MARKER-httpHeaderValue1-a07c"
	markerTracesPass   = "MARKER-tracesBasicAuthPassword-3b9d"
	markerTracesBearer = "MARKER-tracesBearerToken-c42a"
)

var secretMarkers = []string{markerBasicAuth, markerHeader, markerTracesPass, markerTracesBearer}

// secretContext is a data source with Prometheus at promURL and Jaeger at tracesURL (none when
// empty), the fault timeout, and a marker in every secure field.
func secretContext(promURL, tracesURL string, extra map[string]any) backend.PluginContext {
	jd := map[string]any{
		"timeout":             faultTimeout,
		"basicAuth":           true,
		"basicAuthUser":       "grafana",
		"httpHeaderName1":     "X-Scope-OrgID",
		"tracesBasicAuthUser": "trace-reader",
	}
	for k, v := range extra {
		jd[k] = v
	}
	if tracesURL != "" {
		jd["tracesBackend"] = TracesJaeger
		jd["tracesUrl"] = tracesURL
	}
	pc := pluginContext(promURL, jd)
	s := pc.DataSourceInstanceSettings
	s.BasicAuthEnabled, s.BasicAuthUser = true, "grafana"
	s.DecryptedSecureJSONData = map[string]string{
		"basicAuthPassword":       markerBasicAuth,
		"httpHeaderValue1":        markerHeader,
		"tracesBasicAuthPassword": markerTracesPass,
		"tracesBearerToken":       markerTracesBearer,
	}
	return pc
}

// faultCase is one misbehaving backend and the query it hits, beside a healthy neighbour.
type faultCase struct {
	name string
	// prom is the Prometheus of the data source; nil is the env's healthy v1 server.
	prom func(*testing.T, *env) string
	// jaeger answers the trace backend's calls; nil is a healthy one.
	jaeger http.HandlerFunc
	// jaegerWrap wraps the healthy trace backend instead.
	jaegerWrap func(http.HandlerFunc) http.HandlerFunc
	// searchFails: jaegerWrap makes the searches fail too, the health check's among them.
	searchFails bool
	// noJaeger: the trace backend's URL is a port where nothing listens.
	noJaeger bool
	query    map[string]any
	// jsonData is added to the data source's.
	jsonData map[string]any
	// want is the query's failure, or, when notice is set, it answers with that notice.
	want   wantFailure
	notice string
	// neighbour is the healthy query of the batch: "signals" (default) or "requests", when
	// Prometheus as a whole is the fault.
	neighbour string
}

func diagnosisQuery(format DiagnosisFormat) map[string]any {
	return map[string]any{"queryType": "diagnosis", "format": format}
}

func requestsQuery(limit int) map[string]any {
	return map[string]any{"queryType": "requests", "limit": limit}
}

func explainQuery(id string) map[string]any {
	return map[string]any{"queryType": "explain", "traceId": id}
}

var (
	timeoutFailure = func(says ...string) wantFailure {
		return wantFailure{status: backend.StatusTimeout, source: backend.ErrorSourceDownstream, says: says}
	}
	gatewayFailure = func(says ...string) wantFailure {
		return wantFailure{status: backend.StatusBadGateway, source: backend.ErrorSourceDownstream, says: says}
	}
)

const promError422 = `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`

func faultCases() []faultCase {
	kv := signalsQuery(string(series.KVUsage))
	html := "<html><body><h1>502 Bad Gateway</h1></body></html>"
	return []faultCase{
		// Prometheus as a whole: the neighbour is a requests query, answered from the traces.
		{name: "Prometheus down: nothing listens", prom: nothingListens, query: kv, neighbour: "requests",
			want: gatewayFailure("Prometheus", "connection refused")},
		{name: "Prometheus refusing: every connection reset", prom: whole(func(w http.ResponseWriter, _ *http.Request) { resetConn(w) }), query: kv, neighbour: "requests",
			want: gatewayFailure("Prometheus failed", "connection reset")},
		{name: "Prometheus down: diagnosis", prom: nothingListens, query: diagnosisQuery(FormatFindings), neighbour: "requests",
			want: gatewayFailure("Prometheus", "connection refused")},
		{name: "Prometheus down: explain answers without its metrics", prom: nothingListens, query: explainQuery(spanTraceID(0)), neighbour: "requests",
			notice: "The metrics could not be read, so the request is explained without its metric state and findings: Prometheus"},
		{name: "Prometheus slower than the timeout on every path", prom: whole(stalled(status(200, `{}`))), query: kv, neighbour: "requests",
			want: timeoutFailure("Prometheus did not answer in time")},
		{name: "Prometheus not JSON on every path", prom: whole(status(200, html)), query: kv, neighbour: "requests",
			want: gatewayFailure("Prometheus failed")},
		// One range query misbehaves: the neighbour signals query answers.
		{name: "range query slower than the timeout: signals", prom: promFault(stalled(status(200, `{}`))), query: kv,
			want: timeoutFailure("Prometheus did not answer in time")},
		{name: "range query slower than the timeout: diagnosis", prom: promFault(stalled(status(200, `{}`))), query: diagnosisQuery(FormatFindings),
			want: timeoutFailure("Prometheus did not answer in time")},
		{name: "range query slower than the timeout: timeline", prom: promFault(stalled(status(200, `{}`))), query: diagnosisQuery(FormatTimeline),
			want: timeoutFailure("Prometheus did not answer in time")},
		{name: "range query slower than a timeout written as a string", prom: promFault(stalled(status(200, `{}`))), query: kv,
			jsonData: map[string]any{"timeout": "3"}, want: timeoutFailure("Prometheus did not answer in time")},
		{name: "trace backend slower than a timeout written as a string", jaeger: stalled(status(200, `{}`)), query: requestsQuery(50),
			jsonData: map[string]any{"timeout": "3"}, want: timeoutFailure("Jaeger", "did not answer in time")},
		{name: "range query answers 500", prom: promFault(status(500, "internal error")), query: kv,
			want: gatewayFailure("Prometheus failed", "500")},
		{name: "range query answers 503 with Retry-After", prom: promFault(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}), query: kv, want: gatewayFailure("Prometheus failed", "503")},
		{name: "range query answers 422", prom: promFault(status(422, promError422)), query: kv,
			want: gatewayFailure("Prometheus failed", "too many samples")},
		{name: "range query answers 400 bad_data", prom: promFault(status(400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": parse error"}`)), query: kv,
			want: badQueryFailure("Prometheus rejected the query", "parse error")},
		{name: "range query answers 401", prom: promFault(status(401, "Unauthorized")), query: kv,
			want: gatewayFailure("Prometheus failed", "401")},
		{name: "range query answers 429", prom: promFault(status(429, "too many requests")), query: kv,
			want: gatewayFailure("Prometheus failed", "429")},
		{name: "range query body truncated", prom: promFault(truncated(`{"status":"success","data":{"resultType":"matrix","result":[]}}`)), query: kv,
			want: gatewayFailure("Prometheus failed")},
		{name: "range query body not JSON", prom: promFault(status(200, html)), query: kv,
			want: gatewayFailure("Prometheus failed")},
		{name: "range query body empty", prom: promFault(status(200, "")), query: kv,
			want: gatewayFailure("Prometheus failed")},
		{name: "range query status error with 200", prom: promFault(status(200, `{"status":"error","errorType":"internal","error":"store gateway unavailable"}`)), query: kv,
			want: gatewayFailure("Prometheus failed", "store gateway unavailable")},
		{name: "range query answers a vector, not a matrix", prom: promFault(status(200, `{"status":"success","data":{"resultType":"vector","result":[]}}`)), query: kv,
			want: gatewayFailure("vector instead of a matrix")},
		{name: "range query reset once is retried and answers", prom: promFault(resetFirst(status(200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`))), query: kv,
			notice: "kv_usage: no data"},
		{name: "range query warnings become notices", prom: promRewrite(func(b map[string]any) {
			b["warnings"] = []string{"PromQL info: metric might not be a counter"}
		}), query: kv, notice: "metric might not be a counter"},
		{name: "range query partial answer: one series and a warning", prom: promRewrite(func(b map[string]any) {
			d := b["data"].(map[string]any)
			if r, _ := d["result"].([]any); len(r) > 1 {
				d["result"] = r[:1]
			}
			b["warnings"] = []string{"partial response: store 10.0.0.9:10901 unavailable"}
		}), query: kv, notice: "partial response"},
		{name: "alert: range query slower than the timeout", prom: promFault(stalled(status(200, `{}`))), query: diagnosisQuery(FormatAlert),
			want: timeoutFailure("Prometheus did not answer in time")},
		{name: "alert: range query answers 503", prom: promFault(status(503, "unavailable")), query: diagnosisQuery(FormatAlert),
			want: gatewayFailure("Prometheus failed", "503")},
		{name: "alert: range query body not JSON", prom: promFault(status(200, html)), query: diagnosisQuery(FormatAlert),
			want: gatewayFailure("Prometheus failed")},
		{name: "alert: Prometheus down", prom: nothingListens, query: diagnosisQuery(FormatAlert), neighbour: "requests",
			want: gatewayFailure("Prometheus", "connection refused")},
		{name: "alert: range query status error", prom: promFault(status(200, `{"status":"error","errorType":"internal","error":"ruler unavailable"}`)), query: diagnosisQuery(FormatAlert),
			want: gatewayFailure("ruler unavailable")},
		{name: "alert: range query truncated", prom: promFault(truncated(`{"status":"success","data":{"resultType":"matrix","result":[]}}`)), query: diagnosisQuery(FormatAlert),
			want: gatewayFailure("Prometheus failed")},

		// The trace backend misbehaves: the neighbour signals query answers.
		{name: "trace backend down: requests", noJaeger: true, query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "could not be reached")},
		{name: "trace backend down: explain", noJaeger: true, query: explainQuery(spanTraceID(0)),
			want: gatewayFailure("Jaeger", "could not be reached")},
		{name: "trace backend slower than the timeout: requests", jaeger: stalled(status(200, `{}`)), query: requestsQuery(50),
			want: timeoutFailure("Jaeger", "did not answer in time")},
		{name: "trace backend slower than the timeout: explain", jaeger: stalled(status(200, `{}`)), query: explainQuery(spanTraceID(0)),
			want: timeoutFailure("Jaeger", "did not answer in time")},
		{name: "trace search slower than the timeout: explain answers without its peers", jaegerWrap: func(healthy http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/api/v3/traces/") {
					healthy(w, r)
					return
				}
				stalled(healthy)(w, r)
			}
		}, searchFails: true, query: explainQuery(spanTraceID(0)), notice: "could not be read, so this one is not compared"},
		{name: "trace backend answers malformed OTLP", jaegerWrap: byID(status(200, `{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":42,"startTimeUnixNano":"soon"}]}]}]}}`)),
			query: explainQuery(spanTraceID(0)), want: gatewayFailure("Jaeger", "not valid OTLP JSON")},
		{name: "trace backend answers a malformed search", jaeger: status(200, `{"data":[{"traceID":"1","spans":[{"traceID":42,"startTime":"soon"}]}]}`), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "other than Jaeger's search JSON")},
		{name: "trace backend answers HTML", jaeger: status(200, html), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "other than Jaeger's search JSON")},
		{name: "trace backend answers a trace of 50 MB", jaegerWrap: byID(hugeTrace(50 << 20)), query: explainQuery(spanTraceID(0)),
			jsonData: map[string]any{"timeout": 30}, // reading 32 MiB takes longer than the fault timeout under the race detector
			want:     gatewayFailure("Jaeger", "larger than the 32 MiB limit")},
		{name: "trace backend declares a trace of 1 GB", jaegerWrap: byID(declaredTrace(1 << 30)), query: explainQuery(spanTraceID(0)),
			want: gatewayFailure("Jaeger", "larger than the 32 MiB limit")},
		{name: "trace backend answers 500", jaeger: status(500, "boom"), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "500", "failed")},
		{name: "trace backend refuses the credentials", jaeger: status(401, "Unauthorized"), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "refused the credentials")},
		{name: "trace backend rate limits", jaeger: status(429, "slow down"), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "rate limiting")},
		{name: "trace backend body truncated", jaeger: truncated(`{"data":[],"total":0,"limit":0,"offset":0,"errors":null}`), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "cut short")},
		{name: "trace backend answers a search error", jaeger: status(200, `{"data":null,"errors":[{"code":500,"msg":"storage timeout"}]}`), query: requestsQuery(50),
			want: gatewayFailure("Jaeger", "storage timeout")},
		{name: "trace backend has no such trace", jaeger: status(404, `{"error":{"httpCode":404,"message":"trace not found"}}`), query: explainQuery(spanTraceID(0)),
			want: wantFailure{status: backend.StatusNotFound, source: backend.ErrorSourcePlugin, says: []string{"no trace", spanTraceID(0)}}},
		{name: "trace id of the wrong length", query: explainQuery(strings.Repeat("a", 33)),
			want: badQueryFailure("invalid trace id")},
		{name: "trace id that is a path", query: explainQuery("../../api/v3/services"),
			want: badQueryFailure("invalid trace id")},
		{name: "trace search larger than the limit", query: requestsQuery(3),
			notice: "stopped at their limit of 3 traces"},
		{name: "trace backend reset once is retried and answers", jaegerWrap: resetFirst, query: requestsQuery(50),
			notice: "span"},
	}
}

func TestFaults(t *testing.T) {
	e := newEnv(t)
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			promURL := e.v1.URL
			if tc.prom != nil {
				promURL = tc.prom(t, e)
			}
			from, to := e.end.Add(-dataSpan), e.end
			healthy := healthyJaeger(from, to, 20)
			h := tc.jaeger
			switch {
			case tc.jaegerWrap != nil:
				h = tc.jaegerWrap(healthy)
			case h == nil:
				h = healthy
			}
			var (
				mu   sync.Mutex
				seen []string
			)
			jaegerURL := fakeJaeger(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.URL.Path)
				mu.Unlock()
				h(w, r)
			})
			if tc.noJaeger {
				jaegerURL = "http://" + freeAddr(t)
			}
			pc := secretContext(promURL, jaegerURL, tc.jsonData)
			neighbour := e.dataQuery("OK", signalsQuery(string(series.TTFTP50)))
			if tc.neighbour == "requests" {
				neighbour = e.dataQuery("OK", requestsQuery(50))
			}
			res := e.query(t, pc, e.dataQuery("BAD", tc.query), neighbour)
			got := res.Responses["BAD"]
			if tc.notice != "" {
				if got.Error != nil {
					t.Fatalf("failed: %v (status %d, source %s); want an answer with a notice %q", got.Error, got.Status, got.ErrorSource, tc.notice)
				}
				if n := strings.Join(notices(got.Frames), "\n"); !strings.Contains(n, tc.notice) {
					t.Errorf("notices %q do not say %q", n, tc.notice)
				}
			} else {
				checkFailure(t, got, tc.want)
				if len(got.Frames) > 0 && tc.query["format"] == FormatAlert {
					t.Errorf("a failed alert query answered %d frames beside its error", len(got.Frames))
				}
			}
			ok := okResponse(t, res, "OK")
			if tc.neighbour == "requests" {
				if rows := ok.Frames[0].Rows(); rows != 20 {
					t.Errorf("the neighbour requests query answered %d rows, want the 20 spans", rows)
				}
			} else if n := len(signalFrames(t, ok.Frames)); n != 2 {
				t.Errorf("the neighbour signals query answered %d frames, want 2", n)
			}
			hr := e.health(t, pc)
			// A fault of one call leaves the instance sound: its health check's trace search
			// answers wherever the fault is not in the searches themselves.
			if searchHealthy := tc.jaeger == nil && !tc.noJaeger && !tc.searchFails; searchHealthy && strings.Contains(hr.Message, "Trace backend:") {
				t.Errorf("the health check found the trace backend failing: %s", hr.Message)
			}
			_, body := e.resource(t, pc, "instances")
			checkNoSecrets(t, res, pkgLogs.text(), hr.Message, string(body))
			// Read after the health check, whose search the backend records too.
			mu.Lock()
			defer mu.Unlock()
			for _, p := range seen {
				if strings.Contains(p, "..") {
					t.Errorf("the trace backend was asked for path %q", p)
				}
			}
		})
	}
}

// checkNoSecrets fails when any marker shows in the answers, messages or logs.
func checkNoSecrets(t *testing.T, res *backend.QueryDataResponse, texts ...string) {
	t.Helper()
	for ref, r := range res.Responses {
		if r.Error != nil {
			texts = append(texts, r.Error.Error())
		}
		for _, f := range r.Frames {
			raw, err := json.Marshal(f)
			if err != nil {
				t.Fatalf("%s: frame %q does not marshal: %v", ref, f.Name, err)
			}
			texts = append(texts, string(raw))
		}
	}
	for _, text := range texts {
		for _, m := range secretMarkers {
			if strings.Contains(text, m) {
				t.Errorf("secret %s shows in %q", m, clip.To(text, 40))
			}
		}
	}
}

// TestCancelMidFlight: Grafana gives up on a batch (the user leaves the dashboard) while a
// backend stalls: the plugin stops waiting, and the backend sees its request canceled.
func TestCancelMidFlight(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		query map[string]any
		prom  bool
	}{
		{"cancel while Prometheus stalls", signalsQuery(string(series.KVUsage)), true},
		{"cancel while the trace backend stalls", requestsQuery(50), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, canceled := make(chan struct{}, 4), make(chan struct{}, 4)
			wait := func(w http.ResponseWriter, r *http.Request) {
				started <- struct{}{}
				<-r.Context().Done()
				canceled <- struct{}{}
			}
			promURL := e.v1.URL
			jaegerURL := fakeJaeger(t, healthyJaeger(e.end.Add(-dataSpan), e.end, 5))
			if tc.prom {
				promURL = faultyProm(t, e.v1.URL, "kv_cache_usage_perc", func(w http.ResponseWriter, r *http.Request, _ http.Handler) { wait(w, r) })
			} else {
				jaegerURL = fakeJaeger(t, wait)
			}
			pc := pluginContext(promURL, map[string]any{"timeout": 60, "tracesBackend": TracesJaeger, "tracesUrl": jaegerURL})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := e.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{e.dataQuery("A", tc.query)}})
				done <- err
			}()
			// Cancel once the backend holds the request: on a loaded machine a fixed delay can
			// cancel the batch before the call is sent, and the backend then sees nothing.
			select {
			case <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("the backend never got the request")
			}
			cancel()
			select {
			case <-canceled:
			case <-time.After(20 * time.Second):
				t.Fatal("the backend's request was not canceled")
			}
			if err := <-done; err == nil {
				t.Error("QueryData answered a canceled batch without an error")
			}
		})
	}
}
