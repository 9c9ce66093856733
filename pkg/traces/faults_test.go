package traces

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// operation runs one call of a source against a base URL.
type operation struct {
	name string
	run  func(client *http.Client, baseURL string, opts Options) error
}

var operations = []operation{
	{"Tempo search", func(c *http.Client, u string, o Options) error {
		s, err := NewTempo(c, u, o)
		if err != nil {
			return err
		}
		_, _, err = s.Search(context.Background(), tempoQuery())
		return err
	}},
	{"Tempo get", func(c *http.Client, u string, o Options) error {
		s, err := NewTempo(c, u, o)
		if err != nil {
			return err
		}
		_, err = s.Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
		return err
	}},
	{"Jaeger search", func(c *http.Client, u string, o Options) error {
		s, err := NewJaeger(c, u, o)
		if err != nil {
			return err
		}
		_, _, err = s.Search(context.Background(), jaegerQuery())
		return err
	}},
	{"Jaeger get", func(c *http.Client, u string, o Options) error {
		s, err := NewJaeger(c, u, o)
		if err != nil {
			return err
		}
		_, err = s.Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
		return err
	}},
}

func TestBackendFaultsAreDownstream(t *testing.T) {
	faults := []struct {
		name    string
		handler http.HandlerFunc
		opts    Options
		status  int
		want    string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "ingester unavailable", http.StatusInternalServerError)
		}, Options{}, 500, "answered 500: failed: ingester unavailable"},
		{"unavailable", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, Options{}, 503, "answered 503"},
		{"credentials refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}, Options{}, 401, "check the traces basic auth user and password or bearer token"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, Options{}, 0, "did not answer in time"},
		{"truncated body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"traces":[`))
		}, Options{}, 200, "answer was cut short"},
		{"oversized body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":` + strings.Repeat(" ", 4096) + `{}}`))
		}, Options{MaxBodyBytes: 1024}, 200, "larger than the 1024 bytes limit"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`<html>login</html>`))
		}, Options{}, 200, "answered with something other than"},
	}
	for _, op := range operations {
		for _, f := range faults {
			t.Run(op.name+"/"+f.name, func(t *testing.T) {
				srv := httptest.NewServer(f.handler)
				defer srv.Close()
				client := &http.Client{Timeout: 300 * time.Millisecond}
				err := op.run(client, srv.URL, f.opts)
				var d *DownstreamError
				if !errors.As(err, &d) {
					t.Fatalf("err = %v; want a DownstreamError", err)
				}
				if d.Status != f.status || !strings.Contains(err.Error(), f.want) || !strings.Contains(err.Error(), srv.URL) {
					t.Errorf("err = %q (status %d); want status %d, %q and the URL", err, d.Status, f.status, f.want)
				}
			})
		}
	}
}

func TestBackendDownIsDownstream(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	for _, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			err := op.run(http.DefaultClient, url, Options{})
			if !IsDownstream(err) || !strings.Contains(err.Error(), "could not be reached: check tracesUrl") {
				t.Errorf("err = %v; want a downstream error naming tracesUrl", err)
			}
		})
	}
}

func TestErrorsNeverShowThePassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://admin:s3cret@", 1)
	for _, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			err := op.run(http.DefaultClient, base, Options{})
			if err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("err = %v; want an error without the password", err)
			}
		})
	}
}

func TestNewSourceRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:3200", "ftp://tempo", "http://"} {
		if _, err := NewTempo(http.DefaultClient, u, Options{}); err == nil {
			t.Errorf("NewTempo(%q) accepted", u)
		}
		if _, err := NewJaeger(http.DefaultClient, u, Options{}); err == nil {
			t.Errorf("NewJaeger(%q) accepted", u)
		}
	}
}

// hugeTrace writes one trace in OTLP JSON (hex ids, as Jaeger does) with n gateway spans and
// one vLLM span, first or last.
func hugeTrace(n int, vllmFirst bool) string {
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

func TestHugeTraceIsBounded(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		opts     Options
		wantErr  error
		wantText string
	}{
		{"vLLM span past the span bound", `{"result":` + hugeTrace(2000, false) + `}`,
			Options{MaxSpansPerTrace: 1000}, ErrNotVLLM, "among its first 1000 spans (1001 more not read)"},
		{"trace over the size bound", `{"result":` + hugeTrace(2000, true) + `}`,
			Options{MaxBodyBytes: 64 << 10}, nil, "larger than the 65536 bytes limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			j, err := NewJaeger(srv.Client(), srv.URL, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = j.Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %v; want %v with %q", err, tt.wantErr, tt.wantText)
			}
		})
	}
}

func TestSearchCountsSpansPastTheBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"result":` + hugeTrace(1500, true) + `}`))
	}))
	defer srv.Close()
	j, err := NewJaeger(srv.Client(), srv.URL, Options{MaxSpansPerTrace: 1000})
	if err != nil {
		t.Fatal(err)
	}
	q := Query{From: time.Unix(0, 1795941725619000000-1), To: time.Unix(0, 1795941725619000000+1)}
	reqs, info, err := j.Search(context.Background(), q)
	if err != nil || len(reqs) != 1 || info.SpansSkipped != 501 {
		t.Errorf("got %d requests, %d spans skipped, %v; want 1 and 501", len(reqs), info.SpansSkipped, err)
	}
}
