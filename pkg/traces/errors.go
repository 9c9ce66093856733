package traces

import (
	"errors"
	"fmt"
)

// Errors caused by what the user asked for. The plugin reports them with the plugin error
// source; test with errors.Is.
var (
	// ErrInvalidTraceID: the id is not 1 to 32 hexadecimal digits, or is all zeros.
	ErrInvalidTraceID = errors.New("invalid trace id")
	// ErrNotFound: the backend has no trace with that id (expired, sampled out, or never sent).
	ErrNotFound = errors.New("trace not found")
	// ErrNotVLLM: the trace exists but holds no span of the configured vLLM service and span name.
	ErrNotVLLM = errors.New("trace is not a vLLM request")
	// ErrInvalidQuery: a search parameter is out of range (empty time range, negative limit, ...).
	ErrInvalidQuery = errors.New("invalid trace query")
)

// DownstreamError is a failure of the trace backend: unreachable, timed out, an error status,
// or an answer that is truncated, too large or not the expected JSON. The plugin reports it
// with the downstream error source.
type DownstreamError struct {
	// Backend is "Tempo" or "Jaeger"; URL is the base URL with any password redacted.
	Backend, URL string
	// Status is the HTTP status code, 0 when no answer came.
	Status int
	// Msg says what happened and what to check, in words a user can act on.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

func (e *DownstreamError) Error() string {
	s := fmt.Sprintf("%s at %s: ", e.Backend, e.URL)
	if e.Status != 0 && (e.Status < 200 || e.Status > 299) {
		s = fmt.Sprintf("%s at %s answered %d: ", e.Backend, e.URL, e.Status)
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DownstreamError) Unwrap() error { return e.Err }

// IsDownstream reports whether err is (or wraps) a failure of the trace backend.
func IsDownstream(err error) bool {
	var d *DownstreamError
	return errors.As(err, &d)
}
