// Package httpretry retries an idempotent read once when the connection was reset before an
// answer came: a server restarting, a load balancer dropping an idle connection. It never
// retries an answer (a 4xx or 5xx is the server's word), a timeout or a cancellation (the
// caller's deadline is spent), nor a request whose body cannot be sent again.
package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
)

// Idempotent tells the requests that may be sent twice.
type Idempotent func(*http.Request) bool

// SafeMethods is GET and HEAD only.
func SafeMethods(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}

// ReadOnlyClient is for a client that only ever reads, such as a Prometheus API client, whose
// queries are POSTed but change nothing.
func ReadOnlyClient(*http.Request) bool { return true }

// MiddlewareName is the name of the middleware in an SDK HTTP client's chain.
const MiddlewareName = "vllm-retry-on-reset"

// Middleware is an SDK HTTP client middleware that retries once what idempotent allows.
func Middleware(idempotent Idempotent) httpclient.Middleware {
	return httpclient.NamedMiddlewareFunc(MiddlewareName, func(_ httpclient.Options, next http.RoundTripper) http.RoundTripper {
		return RoundTripper(idempotent, next)
	})
}

// RoundTripper wraps next with the retry.
func RoundTripper(idempotent Idempotent, next http.RoundTripper) http.RoundTripper {
	return httpclient.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil || !Reset(err) || req.Context().Err() != nil || !idempotent(req) {
			return resp, err
		}
		again := req.Clone(req.Context())
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return resp, err
			}
			body, berr := req.GetBody()
			if berr != nil {
				return resp, err
			}
			again.Body = body
		}
		return next.RoundTrip(again)
	})
}

// Reset reports whether err is a connection reset or closed before any answer.
func Reset(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
