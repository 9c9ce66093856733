package plugin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// racyBody, like the SDK's byte-counting body, writes a field on Read and reads it on Close.
type racyBody struct {
	io.Reader
	n int
}

func (b *racyBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.n += n
	return n, err
}

func (b *racyBody) Close() error {
	_ = b.n
	return nil
}

type racyTransport struct{}

func (racyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: &racyBody{Reader: strings.NewReader(strings.Repeat("x", 1<<16))}, Request: r}, nil
}

// Run with -race: closing a body from one goroutine while another reads it must not race.
func TestSerialBodiesMayBeClosedWhileRead(t *testing.T) {
	resp, err := serialBodies{next: racyTransport{}}.RoundTrip(httptest.NewRequest(http.MethodGet, "http://prometheus/api/v1/query", nil))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	_ = resp.Body.Close()
	wg.Wait()
}
