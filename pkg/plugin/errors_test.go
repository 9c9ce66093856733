package plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/traces"
)

// TestErrorResponse: the one mapper reads the error source the client edge set and the
// status follows from it; the message is the error's own.
func TestErrorResponse(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status backend.Status
		source backend.ErrorSource
	}{
		{"downstream failure", backend.DownstreamError(errors.New("Prometheus failed")), backend.StatusBadGateway, backend.ErrorSourceDownstream},
		{"downstream timeout", backend.DownstreamError(fmt.Errorf("Jaeger did not answer in time: %w", context.DeadlineExceeded)), backend.StatusTimeout, backend.ErrorSourceDownstream},
		{"plugin error", backend.PluginError(errors.New("bad regex")), backend.StatusBadRequest, backend.ErrorSourcePlugin},
		{"error without a source is the plugin's", errors.New("no trace backend"), backend.StatusBadRequest, backend.ErrorSourcePlugin},
		{"trace not found", fmt.Errorf("%w: no trace 1", traces.ErrNotFound), backend.StatusNotFound, backend.ErrorSourcePlugin},
		{"the plugin's own fault", fmt.Errorf("%w while answering query A: boom", errInternal), backend.StatusInternal, backend.ErrorSourcePlugin},
		{"invalid trace id", fmt.Errorf("%w \"x\"", traces.ErrInvalidTraceID), backend.StatusBadRequest, backend.ErrorSourcePlugin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errorResponse(tc.err)
			if got.Status != tc.status || got.ErrorSource != tc.source || got.Error == nil || got.Error.Error() != tc.err.Error() {
				t.Errorf("got status %d, source %q, error %v; want %d, %q, %q", got.Status, got.ErrorSource, got.Error, tc.status, tc.source, tc.err)
			}
		})
	}
}
