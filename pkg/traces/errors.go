package traces

import "errors"

// Errors caused by what the user asked for: they carry no error source, so the plugin reports
// them as its own (the SDK's default); test with errors.Is. Failures of the trace backend itself
// (unreachable, timed out, an error status, an answer truncated, too large or not the expected
// JSON) are marked at the client edge with the SDK's backend.DownstreamError.
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
