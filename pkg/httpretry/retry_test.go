package httpretry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// resetting is a server whose first `resets` requests get their connection reset (a TCP RST,
// no answer); later ones get status.
func resetting(t *testing.T, resets int32, status int) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) <= resets {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestRetryOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent Idempotent
		method     string
		body       string
		resets     int32
		status     int
		wantCalls  int32
		wantErr    bool
	}{
		{"a GET reset once is sent again and answers", SafeMethods, http.MethodGet, "", 1, 200, 2, false},
		{"a GET reset twice fails after one retry", SafeMethods, http.MethodGet, "", 2, 200, 2, true},
		{"a 4xx is never retried", SafeMethods, http.MethodGet, "", 0, 400, 1, false},
		{"a 5xx answer is never retried", SafeMethods, http.MethodGet, "", 0, 503, 1, false},
		{"a POST is not retried when only safe methods are", SafeMethods, http.MethodPost, "q=up", 1, 200, 1, true},
		{"a read-only client's POST is retried with its body", ReadOnlyClient, http.MethodPost, "q=up", 1, 200, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := resetting(t, tc.resets, tc.status)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: RoundTripper(tc.idempotent, tr)}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, srv.URL, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("server saw %d requests, want %d", got, tc.wantCalls)
			}
			if tc.wantErr {
				if err == nil {
					resp.Body.Close()
					t.Fatal("no error, want the reset's")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(got) != tc.body {
				t.Errorf("answer %d %q, want %d %q", resp.StatusCode, got, tc.status, tc.body)
			}
		})
	}
}

func TestResetIsNotATimeout(t *testing.T) {
	for _, err := range []error{errTimeout{}, io.ErrClosedPipe} {
		if Reset(err) {
			t.Errorf("Reset(%v) = true", err)
		}
	}
}

type errTimeout struct{}

func (errTimeout) Error() string { return "context deadline exceeded" }
func (errTimeout) Is(err error) bool {
	return err == context.DeadlineExceeded
}
