package httpbackend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/traces/jaeger"
	"github.com/seed/vllm-datasource/pkg/traces/tempo"
)

// The faults of the shared HTTP side, through each call of both sources.

// query is a valid search; the faults come before its range matters.
func query() traces.Query {
	from := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	return traces.Query{From: from, To: from.Add(20 * time.Minute)}
}

// sources build each backend's source.
var sources = []struct {
	name string
	new  func(client *http.Client, baseURL string, opts traces.Options) (traces.Source, error)
}{
	{"Tempo", func(c *http.Client, u string, o traces.Options) (traces.Source, error) { return tempo.New(c, u, o) }},
	{"Jaeger", func(c *http.Client, u string, o traces.Options) (traces.Source, error) { return jaeger.New(c, u, o) }},
}

// calls are the calls of a source that reach its backend.
var calls = []struct {
	name string
	run  func(traces.Source) error
}{
	{"search", func(s traces.Source) error { _, _, err := s.Search(context.Background(), query()); return err }},
	{"get", func(s traces.Source) error {
		_, err := s.Get(context.Background(), "35cda8f3cda64ae250a46b22235d5719")
		return err
	}},
}

// operation runs one call of a source against a base URL.
type operation struct {
	name string
	run  func(client *http.Client, baseURL string, opts traces.Options) error
}

// operations are every call of every source.
var operations = func() []operation {
	var ops []operation
	for _, src := range sources {
		for _, c := range calls {
			ops = append(ops, operation{src.name + " " + c.name, func(client *http.Client, baseURL string, opts traces.Options) error {
				s, err := src.new(client, baseURL, opts)
				if err != nil {
					return err
				}
				return c.run(s)
			}})
		}
	}
	return ops
}()

func TestBackendFaultsAreDownstream(t *testing.T) {
	faults := []struct {
		name    string
		handler http.HandlerFunc
		opts    traces.Options
		status  int
		want    string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "ingester unavailable", http.StatusInternalServerError)
		}, traces.Options{}, 500, "answered 500: failed: ingester unavailable"},
		{"unavailable", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, traces.Options{}, 503, "answered 503"},
		{"credentials refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}, traces.Options{}, 401, "check the traces basic auth user and password or bearer token"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, traces.Options{}, 0, "did not answer in time"},
		{"truncated body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"traces":[`))
		}, traces.Options{}, 200, "answer was cut short"},
		{"oversized body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":` + strings.Repeat(" ", 4096) + `{}}`))
		}, traces.Options{MaxBodyBytes: 1024}, 200, "larger than the 1024 bytes limit"},
		{"oversized body declared, never sent", func(w http.ResponseWriter, r *http.Request) {
			// Only the declared length can make this fail on size before the client's timeout.
			w.Header().Set("Content-Length", "1073741824")
			_, _ = w.Write([]byte(`{"result":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, traces.Options{MaxBodyBytes: 1024}, 200, "larger than the 1024 bytes limit"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`<html>login</html>`))
		}, traces.Options{}, 200, "answered with something other than"},
	}
	for _, op := range operations {
		for _, f := range faults {
			t.Run(op.name+"/"+f.name, func(t *testing.T) {
				srv := httptest.NewServer(f.handler)
				defer srv.Close()
				client := &http.Client{Timeout: 300 * time.Millisecond}
				err := op.run(client, srv.URL, f.opts)
				if !backend.IsDownstreamError(err) {
					t.Fatalf("err = %v; want a downstream error", err)
				}
				// Only a status other than 2xx is named: a 200 with a bad body is not an error status.
				named := f.status != 0 && f.status != http.StatusOK
				if strings.Contains(err.Error(), fmt.Sprintf("answered %d", f.status)) != named || !strings.Contains(err.Error(), f.want) || !strings.Contains(err.Error(), srv.URL) {
					t.Errorf("err = %q; want status %d named (%v), %q and the URL", err, f.status, named, f.want)
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
			err := op.run(http.DefaultClient, url, traces.Options{})
			if !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "could not be reached: check tracesUrl") {
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
			err := op.run(http.DefaultClient, base, traces.Options{})
			if err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("err = %v; want an error without the password", err)
			}
		})
	}
}

func TestNewSourceRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:3200", "ftp://tempo", "http://"} {
		for _, src := range sources {
			if _, err := src.new(http.DefaultClient, u, traces.Options{}); err == nil {
				t.Errorf("%s: New(%q) accepted", src.name, u)
			}
		}
	}
}
