package plugin

import (
	"context"
	"errors"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
)

// errInternal marks the plugin's own faults (a recovered panic, a broken invariant), as
// opposed to a query it cannot run as written.
var errInternal = errors.New("internal error in the vLLM Diagnosis plugin")

// errorResponse is the one answer to a failed query. The client edges (signals for
// Prometheus, traces for Tempo and Jaeger) mark the backends' failures with the SDK's
// downstream error source; every other error is the plugin's, the SDK's default. The status
// says which: a timeout or a bad gateway downstream; on the plugin's side, internal for its
// own faults (errInternal), not found for a trace the backend does not have, else a bad
// request. The message is the error's own.
func errorResponse(err error) backend.DataResponse {
	if backend.IsDownstreamError(err) {
		status := backend.StatusBadGateway
		if isTimeout(err) {
			status = backend.StatusTimeout
		}
		return backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, err.Error())
	}
	status := backend.StatusBadRequest
	switch {
	case errors.Is(err, errInternal):
		status = backend.StatusInternal
	case errors.Is(err, traces.ErrNotFound):
		status = backend.StatusNotFound
	}
	return backend.ErrDataResponseWithSource(status, backend.ErrorSourcePlugin, err.Error())
}

// badQuery is the answer to a query that cannot be run as written.
func badQuery(err error) backend.DataResponse {
	return errorResponse(backend.PluginError(err))
}

// isTimeout reports whether a backend call ran out of time (the client's timeout or the
// query's deadline).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
