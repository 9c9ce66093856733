package plugin

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// connTracker counts a test server's open client connections, as the server sees them.
type connTracker struct {
	mu     sync.Mutex
	open   map[net.Conn]bool
	opened int
}

func (c *connTracker) state(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open[conn] = true
		c.opened++
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
	}
}

func (c *connTracker) counts() (open, opened int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open), c.opened
}

// trackedServer serves h, counting its connections.
func trackedServer(t *testing.T, h http.Handler) (*httptest.Server, *connTracker) {
	t.Helper()
	c := &connTracker{open: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = c.state
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, c
}

// TestDisposeClosesIdleConnections: when Grafana replaces a data source instance (its settings
// were saved), the instance manager disposes of the old one, which closes the keep-alive
// connections its Prometheus and trace clients kept open. The servers see them closed.
func TestDisposeClosesIdleConnections(t *testing.T) {
	e := newEnv(t)
	target, err := url.Parse(e.v1.URL)
	if err != nil {
		t.Fatal(err)
	}
	prom, promConns := trackedServer(t, httputil.NewSingleHostReverseProxy(target))
	jaeger, jaegerConns := trackedServer(t, healthyJaeger(e.end.Add(-dataSpan), e.end, 5))
	pc := pluginContext(prom.URL, map[string]any{"timeout": 30, "tracesBackend": TracesJaeger, "tracesUrl": jaeger.URL})

	if hr := e.health(t, pc); hr.Status != backend.HealthStatusOk {
		t.Fatalf("health: %s", hr.Message)
	}
	for name, c := range map[string]*connTracker{"Prometheus": promConns, "Jaeger": jaegerConns} {
		if open, _ := c.counts(); open == 0 {
			t.Fatalf("%s: no keep-alive connection open after the health check", name)
		}
	}

	// Saved settings: the next call builds a new instance, and the manager disposes of the old
	// one a few seconds later. The new one calls no backend.
	next := pc
	s := *pc.DataSourceInstanceSettings
	s.Updated = s.Updated.Add(time.Second)
	next.DataSourceInstanceSettings = &s
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.client.QueryData(ctx, &backend.QueryDataRequest{PluginContext: next}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pOpen, pOpened := promConns.counts()
		jOpen, jOpened := jaegerConns.counts()
		if pOpen == 0 && jOpen == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the instance was replaced, %d of %d Prometheus and %d of %d Jaeger connections are still open", pOpen, pOpened, jOpen, jOpened)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
