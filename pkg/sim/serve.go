package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/seed/vllm-datasource/pkg/internal/option"
)

// live is a scenario advanced on demand, for serving: no scrapes are stored, the registries
// are read when Prometheus asks.
type live struct {
	mu    sync.Mutex
	sims  []*instanceSim
	spans []Span
}

func newLive(sc Scenario, d time.Duration) (*live, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	l := &live{}
	for i := range sc.Instances {
		s := newInstanceSim(&sc, i, d.Seconds(), 15)
		s.onSpan = func(sp Span) { l.spans = append(l.spans, sp) }
		l.sims = append(l.sims, s)
	}
	return l, nil
}

func (l *live) advanceTo(t float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.sims {
		s.advance(t, nil, nil)
	}
}

func (l *live) takeSpans() []Span {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.spans
	l.spans = nil
	return out
}

// textFormat is what client libraries answer a plain scrape with.
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

func writeText(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, textFormat)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

func (l *live) handler(i int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		l.mu.Lock()
		s := l.sims[i]
		up, reg := s.up(), s.metrics.scraped
		l.mu.Unlock()
		if !up {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", string(textFormat))
		if err := writeText(w, reg); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// ServeOptions configure Serve.
type ServeOptions struct {
	// Listen is host:port of the first instance; instance i listens on port+i, and its
	// address (the instance label and service.instance.id) becomes that host:port.
	Listen string
	// Duration is the scenario's length: faults happen at their fractions of it; afterwards
	// the instances stay in their base configuration.
	Duration time.Duration
	// Exporter receives the spans every few seconds; nil keeps none.
	Exporter *Exporter
	// Ready is called with the instances' addresses once they all listen.
	Ready func(addresses []string)
}

// Serve runs the scenario against the wall clock until ctx ends, serving each instance's
// /metrics on its own port (so Prometheus's instance label is that host:port).
func Serve(ctx context.Context, sc Scenario, o ServeOptions) error {
	sc, err := Relisten(sc, o.Listen)
	if err != nil {
		return err
	}
	l, err := newLive(sc, option.PositiveOr(o.Duration, time.Hour))
	if err != nil {
		return err
	}
	var servers []*http.Server
	var addrs []string
	errc := make(chan error, len(sc.Instances))
	for i, in := range sc.Instances {
		ln, err := net.Listen("tcp", in.Address)
		if err != nil {
			for _, s := range servers {
				s.Close()
			}
			return fmt.Errorf("instance %d cannot listen on %s: %w", i, in.Address, err)
		}
		srv := &http.Server{Handler: l.handler(i), ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		addrs = append(addrs, in.Address)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	if o.Ready != nil {
		o.Ready(addrs)
	}
	start := time.Now()
	for i := range l.sims {
		l.sims[i].base = start
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastExport := start
	for {
		select {
		case <-ctx.Done():
			return flush(l, o.Exporter)
		case err := <-errc:
			return fmt.Errorf("serving metrics: %w", err)
		case now := <-tick.C:
			l.advanceTo(now.Sub(start).Seconds())
			if o.Exporter != nil && now.Sub(lastExport) >= 2*time.Second {
				lastExport = now
				ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := o.Exporter.Export(ectx, l.takeSpans())
				cancel()
				if err != nil && ctx.Err() == nil {
					return err
				}
			}
		}
	}
}

func flush(l *live, x *Exporter) error {
	if x == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return x.Export(ctx, l.takeSpans())
}

// Relisten returns the scenario with instance i at listen's port plus i: the addresses that
// Serve gives the instances, so that an Exporter made for it names them the same way.
func Relisten(sc Scenario, listen string) (Scenario, error) {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return sc, fmt.Errorf("listen address %q: want host:port: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port+len(sc.Instances)-1 > 65535 {
		return sc, fmt.Errorf("listen address %q: want a port from 1 to %d", listen, 65536-len(sc.Instances))
	}
	sc.Instances = append([]Instance(nil), sc.Instances...)
	for i := range sc.Instances {
		sc.Instances[i].Address = net.JoinHostPort(host, strconv.Itoa(port+i))
	}
	return sc, nil
}

// WriteFileAtomic writes a file through write into a temporary file beside it and renames
// it into place, so that an error never leaves a half-written file.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteFile writes the OpenMetrics file atomically.
func (r *Result) WriteFile(path string) error {
	return WriteFileAtomic(path, r.WriteOpenMetrics)
}

// WriteTruth writes the ground truth as a JSON list atomically.
func (r *Result) WriteTruth(path string) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		truth := r.Truth
		if truth == nil {
			truth = []Finding{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(truth)
	})
}
