package plugin

import (
	"bytes"
	"encoding/json"
	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/seed/vllm-datasource/pkg/series"
)

// hostile are values a query, a template variable or a resource call may carry, meant to
// change the PromQL, the trace query or the URL path.
var hostile = map[string]string{
	"double quote":             `a"b`,
	"closing the selector":     `x"} or vector(1) #`,
	"or vector(1)":             `.*"}) or vector(1) or sum({a="`,
	"braces":                   `{}{`,
	"backslashes":              `a\\"b\`,
	"backslash quote":          `\"`,
	"path traversal":           `../../api/v1/admin/tsdb/delete_series`,
	"newline":                  "a\nb\r\nc",
	"unicode":                  "модель-😀-\u2028-\u200b",
	"NUL":                      "a\x00b",
	"10,000 characters":        strings.Repeat("a", 10000),
	"10,000 quotes":            strings.Repeat(`"`, 10000),
	"regex with a quote":       `10\.0\.0\.1:8000|x"`,
	"template variable left":   `$instance`,
	"multi-value interpolated": `(10\.0\.0\.1:8000|evil"} or vector(1))`,
}

// recordingProm is a proxy to the env's v1 Prometheus that records every PromQL expression and
// series selector the plugin sends.
type recordingProm struct {
	mu    sync.Mutex
	exprs []string // query= of query and query_range
	sels  []string // match[] of label values
	paths []string
}

func newRecordingProm(t *testing.T, target string) (*recordingProm, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingProm{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		for k, v := range r.URL.Query() {
			form[k] = append(form[k], v...)
		}
		rec.mu.Lock()
		rec.paths = append(rec.paths, r.URL.Path)
		rec.exprs = append(rec.exprs, form["query"]...)
		rec.sels = append(rec.sels, form["match[]"]...)
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// check parses every recorded expression and selector: each must parse, call no vector() nor
// select any series but vLLM's, and every matcher on label must carry exactly value. When
// value is a filter the plugin accepts, some selector must carry it (the filter is not dropped).
func (rec *recordingProm) check(t *testing.T, label, value string, accepted bool) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, p := range rec.paths {
		if !strings.HasPrefix(p, "/api/v1/") || strings.Contains(p, "..") || strings.Contains(p, "admin") {
			t.Errorf("Prometheus was asked for path %q", p)
		}
	}
	var carried bool
	checkMatchers := func(what string, ms []*labels.Matcher) {
		for _, m := range ms {
			switch m.Name {
			case labels.MetricName:
				if !strings.HasPrefix(m.Value, "vllm:") {
					t.Errorf("%s selects %q, not a vLLM metric", clip.To(what, 40), m.Value)
				}
			case label:
				carried = true
				if m.Value != value || m.Type != labels.MatchRegexp {
					t.Errorf("%s: %s matcher %s, want =~ the value as sent", clip.To(what, 40), label, clip.To(m.String(), 40))
				}
			}
		}
	}
	defer func() {
		if accepted && !carried {
			t.Errorf("no query carried the %s filter: it was dropped", label)
		}
	}()
	for _, e := range rec.exprs {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(e)
		if err != nil {
			t.Errorf("the plugin sent PromQL that does not parse: %v: %s", err, clip.To(e, 40))
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.Call:
				if n.Func.Name == "vector" {
					t.Errorf("%s calls vector()", clip.To(e, 40))
				}
			case *parser.VectorSelector:
				checkMatchers(e, n.LabelMatchers)
			}
			return nil
		})
	}
	for _, s := range rec.sels {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
		if err != nil {
			t.Errorf("the plugin sent a selector that does not parse: %v: %s", err, clip.To(s, 40))
			continue
		}
		checkMatchers(s, ms)
	}
}

// TestInjection sends each hostile value as the instance and the model of signals and
// diagnosis queries, and as the filter of the resource routes: the value either stays one
// quoted matcher value, or the query fails as the plugin's, naming the filter.
func TestInjection(t *testing.T) {
	e := newEnv(t)
	for name, v := range hostile {
		for _, field := range []struct{ query, label, resource, param string }{
			{"instance", "instance", "models", "instance"},
			{"model", "model_name", "instances", "model"},
		} {
			t.Run(name+" as "+field.query, func(t *testing.T) {
				rec, promURL := newRecordingProm(t, e.v1.URL)
				pc := pluginContext(promURL, nil)
				_, valid := regexp.Compile(v)
				if _, anchored := regexp.Compile("^(?:" + v + ")$"); valid == nil {
					valid = anchored
				}
				sq := signalsQuery(string(series.KVUsage), string(series.TTFTP99))
				sq[field.query] = v
				dq := map[string]any{"queryType": "diagnosis", field.query: v}
				res := e.query(t, pc, e.dataQuery("S", sq), e.dataQuery("D", dq), e.dataQuery("OK", signalsQuery(string(series.TTFTP50))))
				for _, ref := range []string{"S", "D"} {
					r := res.Responses[ref]
					if valid != nil {
						checkFailure(t, r, badQueryFailure(field.query, "regular expression"))
					} else if r.Error != nil {
						t.Errorf("%s failed: %v", ref, r.Error)
					}
				}
				if got := signalFrames(t, okResponse(t, res, "OK").Frames); len(got) != 2 {
					t.Errorf("the neighbour query answered %d frames, want 2", len(got))
				}
				status, body := e.resource(t, pc, field.resource+"?"+url.Values{field.param: {v}}.Encode())
				if valid != nil {
					if status != http.StatusBadRequest {
						t.Errorf("resource %s: status %d, want 400: %s", field.resource, status, clip.To(string(body), 40))
					}
				} else {
					var vals []string
					if err := json.Unmarshal(body, &vals); status != http.StatusOK || err != nil {
						t.Errorf("resource %s: %d %s, want 200 and a list", field.resource, status, clip.To(string(body), 40))
					}
					for _, got := range vals {
						if got != serverA.instance && got != serverB.instance && got != serverA.model && got != serverB.model {
							t.Errorf("resource %s listed %q, which Prometheus does not hold", field.resource, clip.To(got, 40))
						}
					}
				}
				rec.check(t, field.label, v, valid == nil)
			})
		}
	}
}

// TestTraceIDInjection: a hostile trace id never reaches the trace backend's URL: it fails as
// a bad query, and the backend is asked for nothing.
func TestTraceIDInjection(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var asked []string
	jaegerURL := fakeJaeger(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		healthyJaeger(e.end.Add(-dataSpan), e.end, 3)(w, r)
	})
	pc := pluginContext(e.v1.URL, map[string]any{"tracesBackend": TracesJaeger, "tracesUrl": jaegerURL})
	ids := map[string]string{"id with a query string": "abc?x=1", "id with a fragment": "abc#x", "id with a slash": "abc/def",
		"id with spaces": "ab cd", "id with %2e%2e": "%2e%2e%2f"}
	for name, v := range hostile {
		ids[name] = v
	}
	for name, id := range ids {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			for _, q := range []backend.DataQuery{e.dataQuery("A", explainQuery(id)), e.dataQuery("B", map[string]any{"expr": "explain " + id})} {
				res := e.query(t, pc, q)
				r := res.Responses[q.RefID]
				if r.Error == nil || r.ErrorSource != backend.ErrorSourcePlugin {
					t.Errorf("%s: %v (source %q), want the plugin's error", q.RefID, r.Error, r.ErrorSource)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) > 0 {
				t.Errorf("the trace backend was asked %q", asked)
			}
		})
	}
}
