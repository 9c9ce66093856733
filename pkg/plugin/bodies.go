package plugin

import (
	"io"
	"net/http"
	"sync"
)

// serialBodies makes every response body safe to close while it is being read. Prometheus's
// client reads a body in one goroutine and, when the query's context ends first, closes it from
// another; the SDK's byte-counting body (httpclient's countBytesReader) is not safe for that,
// and the race detector sees it whenever a fetch is cancelled mid-read (one query of a
// diagnosis fails and the others are called off). A Close waits for the Read in flight, which
// the transport ends as soon as the context is done.
type serialBodies struct{ next http.RoundTripper }

func (s serialBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &serialBody{body: resp.Body}
	}
	return resp, err
}

type serialBody struct {
	mu   sync.Mutex
	body io.ReadCloser
}

func (b *serialBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.body.Read(p)
}

func (b *serialBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.body.Close()
}
