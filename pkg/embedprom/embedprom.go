// Package embedprom is a Prometheus inside the process: a TSDB in a directory, Prometheus's
// PromQL engine with the defaults the prometheus binary starts with, and Prometheus's own v1
// HTTP API served on a loopback port, so that a Prometheus client (the plugin's) talks to it as
// to a real server and gets the same answers for the same data.
//
// Data gets in two ways: Backfill writes blocks from OpenMetrics text with timestamps, as
// `promtool tsdb create-blocks-from openmetrics` does, before Open; Scrape runs Prometheus's
// scrape manager into the open TSDB. The directory is an ordinary TSDB directory: a real
// Prometheus started with --storage.tsdb.path on it reads the same series.
//
// It links Prometheus's storage and web packages, so only commands import it, never the plugin.
package embedprom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/tsdb"
	apiv1 "github.com/prometheus/prometheus/web/api/v1"
)

// The query engine's limits and defaults are the prometheus binary's flag defaults
// (--query.max-samples, --query.timeout, --query.lookback-delta, and the global
// evaluation_interval that subqueries without a step use).
const (
	maxSamples     = 50_000_000
	queryTimeout   = 2 * time.Minute
	lookbackDelta  = 5 * time.Minute
	subqueryStepMs = int64(time.Minute / time.Millisecond)
)

// retention keeps every block: a demo's or a saved run's data is hours or days old, and a
// Prometheus's default 15 days would delete an older saved directory on open.
const retention = 100 * 365 * 24 * time.Hour

// Server is an open TSDB with its query API on a loopback port.
type Server struct {
	db     *tsdb.DB
	srv    *http.Server
	url    string
	served chan error
	reg    *prometheus.Registry
	logger *slog.Logger

	// scraper is the scrape manager once Scrape started it; tsets feeds it its targets.
	scraper atomic.Pointer[scrape.Manager]
	tsets   chan map[string][]*targetgroup.Group
}

// Open opens (or creates) the TSDB in dir and serves its v1 API on 127.0.0.1 at a port the
// kernel picks. Close stops both.
func Open(dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("TSDB directory: %w", err)
	}
	logger := promslog.NewNopLogger()
	reg := prometheus.NewRegistry()
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = int64(retention / time.Millisecond)
	db, err := tsdb.Open(dir, logger, reg, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the TSDB in %s: %w", dir, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	s := &Server{db: db, url: "http://" + l.Addr().String(), served: make(chan error, 1), reg: reg, logger: logger}
	s.srv = &http.Server{Handler: s.handler(dir), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.srv.Serve(l) }()
	return s, nil
}

// URL is the base URL of the API, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.url }

// Close stops serving and closes the TSDB, writing what its head holds to its write-ahead log
// so that the directory can be opened again.
func (s *Server) Close() error {
	if m := s.scraper.Load(); m != nil {
		m.Stop()
		close(s.tsets)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, s.db.Close())
}

// handler is Prometheus's v1 API under /api/v1, with query, series, labels and metadata; the
// parts a server without scrape targets, rules or alertmanagers lacks answer empty.
func (s *Server) handler(dir string) http.Handler {
	engine := promql.NewEngine(promql.EngineOpts{
		Logger:                   s.logger,
		Reg:                      s.reg,
		MaxSamples:               maxSamples,
		Timeout:                  queryTimeout,
		LookbackDelta:            lookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return subqueryStepMs },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
	})
	cfg := config.DefaultConfig
	api := apiv1.NewAPI(
		engine, s.db, nil, s.db,
		func(context.Context) apiv1.ScrapePoolsRetriever { return s.targetRetriever() },
		func(context.Context) apiv1.TargetRetriever { return s.targetRetriever() },
		func(context.Context) apiv1.AlertmanagerRetriever { return noAlertmanagers{} },
		func() config.Config { return cfg },
		map[string]string{"storage.tsdb.path": dir},
		apiv1.GlobalURLOptions{ListenAddress: s.url, Scheme: "http"},
		func(f http.HandlerFunc) http.HandlerFunc { return f },
		adminStats{s.db}, dir,
		false, false, 0, // admin, search, search limit
		s.logger,
		func(context.Context) apiv1.RulesRetriever { return noRules{} },
		0, 0, 0, // remote read limits
		false, // agent
		nil,   // CORS origin
		func() (apiv1.RuntimeInfo, error) { return apiv1.RuntimeInfo{}, nil },
		&apiv1.PrometheusVersion{Version: "embedded"},
		nil, nil, // notifications
		s.reg, s.reg,
		nil,        // stats renderer
		false, nil, // remote write
		false, false, false, // OTLP
		lookbackDelta,
		false, false, // type and unit labels, metadata
		nil, // error codes
		nil, // feature registry
		apiv1.OpenAPIOptions{},
		nil,   // the default PromQL parser
		false, // query cost
		queryTimeout,
	)
	router := route.New()
	api.Register(router.WithPrefix("/api/v1"))
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", router)
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Ready.") })
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Healthy.") })
	return mux
}

// Span is the time range of the stored samples, first to last; ok is false when the TSDB
// holds none.
func (s *Server) Span() (from, to time.Time, ok bool) {
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	for _, b := range s.db.Blocks() {
		m := b.Meta()
		// A block's MaxTime is one past its last sample.
		mint, maxt = min(mint, m.MinTime), max(maxt, m.MaxTime-1)
	}
	if h := s.db.Head(); h.NumSeries() > 0 {
		mint, maxt = min(mint, h.MinTime()), max(maxt, h.MaxTime())
	}
	if maxt < mint {
		return time.Time{}, time.Time{}, false
	}
	return time.UnixMilli(mint), time.UnixMilli(maxt), true
}

// targetRetriever answers the API's target endpoints: the scrape manager's targets, or none.
func (s *Server) targetRetriever() interface {
	apiv1.ScrapePoolsRetriever
	apiv1.TargetRetriever
} {
	if m := s.scraper.Load(); m != nil {
		return m
	}
	return noTargets{}
}
