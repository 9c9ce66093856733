// Package plugin is the Grafana adapter of vLLM Diagnosis, and only that: it reads the data
// source's settings, routes each query by its queryType to one handler, answers health checks
// and serves the resource routes that editors and template variables call. A handler plans its
// query (pkg/plan), has the plan fetched (signals.Client.FetchAll for the metrics,
// traces.SearchAll for the trace searches), calls the pure evaluation and returns the frames
// pkg/frames builds complete. Every failed query, a recovered panic included, is answered by
// one mapper (errorResponse).
package plugin

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/concurrent"
	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/seed/vllm-datasource/pkg/httpretry"
	"github.com/seed/vllm-datasource/pkg/promstream"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// queryConcurrency bounds the queries of one request that run at once; each query fans out
// its own Prometheus range queries.
const queryConcurrency = 4

// Datasource is one configured vLLM Diagnosis data source.
type Datasource struct {
	settings    Settings
	settingsErr error
	prom        *signals.Client
	// traces is the trace backend, nil when none is configured.
	traces    traces.Source
	resources backend.CallResourceHandler
	// evals shares diagnosis evaluations between the queries of one refresh.
	evals *evalCache
	// closeIdle closes the idle keep-alive connections of the instance's HTTP clients.
	closeIdle []func()
}

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// NewDatasource is the instance factory Grafana calls for each data source configuration.
// Invalid settings do not fail the instance: every query and the health check report them,
// so the user sees what to fix.
func NewDatasource(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	ds := &Datasource{}
	ds.resources = httpadapter.New(ds.routes())
	settings, err := LoadSettings(s)
	if err != nil {
		ds.settingsErr = err
		return ds, nil
	}
	ds.settings = settings
	// An evaluation is kept less than one scrape interval: after that Prometheus may hold new data.
	ds.evals = newEvalCache(settings.ScrapeInterval)
	opts, err := s.HTTPClientOptions(ctx)
	if err != nil {
		ds.settingsErr = fmt.Errorf("the data source's HTTP settings are not valid: %w", err)
		return ds, nil
	}
	client, closeIdle, err := newHTTPClient(opts, settings.Timeout, httpretry.ReadOnlyClient)
	if err != nil {
		ds.settingsErr = fmt.Errorf("cannot build an HTTP client from the data source's settings: %w", err)
		return ds, nil
	}
	ds.closeIdle = append(ds.closeIdle, closeIdle)
	client.Transport = serialBodies{next: client.Transport}
	api, err := promapi.NewClient(promapi.Config{Address: settings.PrometheusURL, Client: client})
	if err != nil {
		ds.settingsErr = fmt.Errorf("the Prometheus URL %q is not usable: %w", redacted(settings.PrometheusURL), err)
		return ds, nil
	}
	// Range answers are the bulk of what a diagnosis reads: decoded as they arrive.
	ds.prom = signals.NewClient(promstream.New(v1.NewAPI(api), api, client), settings.Labels, settings.ScrapeInterval, settings.LabelMatchers)
	ds.traces, closeIdle, err = newTracesSource(settings)
	if err != nil {
		ds.settingsErr = err
		return ds, nil
	}
	if closeIdle != nil {
		ds.closeIdle = append(ds.closeIdle, closeIdle)
	}
	return ds, nil
}

// newHTTPClient builds an SDK HTTP client bounded by the data source's timeout and retrying
// what idempotent allows, and returns its transport's CloseIdleConnections for Dispose: the
// SDK's middleware chain hides the transport from http.Client.CloseIdleConnections.
func newHTTPClient(opts httpclient.Options, timeout time.Duration, idempotent httpretry.Idempotent) (*http.Client, func(), error) {
	var transport *http.Transport
	configure := opts.ConfigureTransport
	opts.ConfigureTransport = func(o httpclient.Options, t *http.Transport) {
		if configure != nil {
			configure(o, t)
		}
		transport = t
	}
	client, err := httpclient.New(withTimeoutAndRetry(opts, timeout, idempotent))
	if err != nil {
		return nil, nil, err
	}
	return client, func() {
		if transport != nil {
			transport.CloseIdleConnections()
		}
	}, nil
}

// withTimeoutAndRetry bounds every call of a client by the data source's timeout (the SDK
// reads jsonData.timeout only when it is a number, and none at all otherwise) and retries an
// idempotent read once on a connection reset. The retry sits innermost, after auth and headers.
func withTimeoutAndRetry(opts httpclient.Options, timeout time.Duration, idempotent httpretry.Idempotent) httpclient.Options {
	t := httpclient.DefaultTimeoutOptions
	if opts.Timeouts != nil {
		t = *opts.Timeouts
	}
	t.Timeout = timeout
	opts.Timeouts = &t
	if opts.Middlewares == nil {
		opts.Middlewares = httpclient.DefaultMiddlewares()
	}
	opts.Middlewares = append(opts.Middlewares, httpretry.Middleware(idempotent))
	return opts
}

// Dispose is called by Grafana's instance manager once the instance has been replaced (the
// settings were saved) or evicted. It closes the idle keep-alive connections of the
// Prometheus and trace clients, whose read and write goroutines would otherwise stay until the
// transport's idle timeout (Grafana's httpIdleConnTimeout setting, 90 s by default). A
// connection still busy with a late query goes back to the pool when it ends and closes after
// that timeout.
func (d *Datasource) Dispose() {
	for _, closeIdle := range d.closeIdle {
		closeIdle()
	}
}

// QueryData answers each query of a request on its own, concurrently; one query's failure or
// panic becomes that query's error and never fails the batch.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return concurrent.QueryData(ctx, req, func(ctx context.Context, cq concurrent.Query) (res backend.DataResponse) {
		defer func() {
			if r := recover(); r != nil {
				log.DefaultLogger.FromContext(ctx).Error("query panicked", "refId", cq.DataQuery.RefID, "panic", r, "stack", string(debug.Stack()))
				// The stack goes to the log only: the response is shown to every viewer.
				res = errorResponse(fmt.Errorf("%w while answering query %s (the plugin's log has the details): %v", errInternal, cq.DataQuery.RefID, r))
			}
		}()
		return d.query(ctx, cq.DataQuery)
	}, queryConcurrency)
}

func (d *Datasource) query(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	if d.settingsErr != nil {
		return badQuery(fmt.Errorf("data source settings: %w", d.settingsErr))
	}
	query, err := ParseQuery(q.JSON, q.QueryType)
	if err != nil {
		return badQuery(err)
	}
	k, _ := lookup(queryTypes, query.QueryType())
	return k.handle(ctx, d, q, query)
}

// CallResource serves the routes that editors and template variables call.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	return d.resources.CallResource(ctx, req, sender)
}
