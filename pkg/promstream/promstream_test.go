package promstream_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/promstream"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// apis are the same Prometheus through client_golang and through promstream.
func apis(t *testing.T, address string) (golang v1.API, stream v1.API) {
	t.Helper()
	client, err := promapi.NewClient(promapi.Config{Address: address, Client: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(client), promstream.New(v1.NewAPI(client), client, http.DefaultClient)
}

// sameMatrix compares two matrices sample by sample, NaN equal to NaN.
func sameMatrix(t *testing.T, got, want model.Matrix) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Metric.Equal(want[i].Metric) {
			t.Fatalf("series %d is %v, want %v", i, got[i].Metric, want[i].Metric)
		}
		if len(got[i].Values) != len(want[i].Values) {
			t.Fatalf("%v: %d samples, want %d", want[i].Metric, len(got[i].Values), len(want[i].Values))
		}
		for k, w := range want[i].Values {
			g := got[i].Values[k]
			same := g.Value == w.Value || (math.IsNaN(float64(g.Value)) && math.IsNaN(float64(w.Value)))
			if g.Timestamp != w.Timestamp || !same {
				t.Fatalf("%v sample %d is %v, want %v", want[i].Metric, k, g, w)
			}
		}
	}
}

func TestQueryRangeDecodesAsClientGolangDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	start := time.Now().Add(-40 * time.Minute).Truncate(time.Minute)
	sc, err := sim.Fleet(3)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sc, start, 30*time.Minute, 15*time.Second, sim.WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fleet.om")
	if err := res.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	prom := testbed.Prometheus(t, file)
	golang, stream := apis(t, prom.URL)
	r := v1.Range{Start: start.Add(90 * time.Second), End: start.Add(29 * time.Minute), Step: 15 * time.Second}
	tests := []struct {
		name, query string
		series      bool // whether the answer has series, so that the comparison is not empty
	}{
		{"bucket rates of a histogram", `sum by (instance, model_name, le) (rate(vllm:time_to_first_token_seconds_bucket[1m]))`, true},
		{"a gauge, raw", `vllm:kv_cache_usage_perc`, true},
		{"fractional step timestamps", `vllm:num_requests_waiting`, true},
		{"NaN and infinities", `sum by (instance) (rate(vllm:num_preemptions_total[1m])) / 0`, true},
		{"no data", `vllm:no_such_metric`, false},
		{"a scalar answered as a matrix", `vector(1)`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := r
			if tt.name == "fractional step timestamps" {
				rr.Step = 7500 * time.Millisecond
				rr.Start = rr.Start.Add(250 * time.Millisecond)
			}
			ctx := context.Background()
			want, wantWarn, _, err := golang.QueryRange(ctx, tt.query, rr)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(want.(model.Matrix)); (n > 0) != tt.series {
				t.Fatalf("client_golang read %d series", n)
			}
			got, gotWarn, _, err := stream.QueryRange(ctx, tt.query, rr)
			if err != nil {
				t.Fatal(err)
			}
			sameMatrix(t, got.(model.Matrix), want.(model.Matrix))
			if fmt.Sprint(gotWarn) != fmt.Sprint(wantWarn) {
				t.Errorf("warnings %v, want %v", gotWarn, wantWarn)
			}
		})
	}
}

func TestQueryRangeAnswersFaultsAsClientGolangDoes(t *testing.T) {
	status := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	matrix := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1700000000.5,"1.5"],[1700000001,"NaN"]]}]}}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"a matrix", status(200, matrix)},
		{"warnings and infos after the data", status(200, `{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["partial response"],"infos":["metric might not be a counter"]}`)},
		{"data before status", status(200, `{"data":{"result":[],"resultType":"matrix"},"status":"success"}`)},
		{"a vector", status(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"1"]}]}}`)},
		{"status error with 200", status(200, `{"status":"error","errorType":"internal","error":"store gateway unavailable"}`)},
		{"400 bad_data", status(400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": parse error"}`)},
		{"422 execution", status(422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"}`)},
		{"422 without type or message", status(422, `{"status":"error"}`)},
		{"400 that says success", status(400, `{"status":"success","data":{}}`)},
		{"400 not JSON", status(400, "bad request")},
		{"500", status(500, "internal error")},
		{"503", status(503, "overloaded")},
		{"302 without a location", status(302, "")},
		{"not JSON", status(200, "<html><body>502 Bad Gateway</body></html>")},
		{"empty", status(200, "")},
		{"a sample of three", status(200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1",2]]}]}}`)},
		{"a value that is no number", status(200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"one"]]}]}}`)},
		{"POST refused, GET answers", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				status(405, "method not allowed")(w, r)
				return
			}
			status(200, matrix)(w, r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			golang, stream := apis(t, srv.URL)
			r := v1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700000060, 0), Step: 15 * time.Second}
			want, wantWarn, wantInfo, wantErr := golang.QueryRange(context.Background(), "up", r)
			got, gotWarn, gotInfo, gotErr := stream.QueryRange(context.Background(), "up", r)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if wantErr != nil {
				var we, ge *v1.Error
				if errors.As(wantErr, &we) != errors.As(gotErr, &ge) {
					t.Fatalf("error %T %v, want %T %v", gotErr, gotErr, wantErr, wantErr)
				}
				// A bad response's message is the JSON decoder's own wording; the rest are equal.
				if we != nil && (we.Type != ge.Type || (we.Type != v1.ErrBadResponse && we.Msg != ge.Msg)) {
					t.Errorf("error %q (%s), want %q (%s)", ge.Msg, ge.Type, we.Msg, we.Type)
				}
			}
			if fmt.Sprint(gotWarn, gotInfo) != fmt.Sprint(wantWarn, wantInfo) {
				t.Errorf("warnings and infos %v %v, want %v %v", gotWarn, gotInfo, wantWarn, wantInfo)
			}
			if want != nil && wantErr == nil {
				if got == nil || got.Type() != want.Type() {
					t.Fatalf("answer %v, want a %s", got, want.Type())
				}
				if m, ok := want.(model.Matrix); ok {
					sameMatrix(t, got.(model.Matrix), m)
				}
			}
		})
	}
}

func TestQueryRangeStopsWhenItsContextEnds(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
		w.(http.Flusher).Flush()
		<-block
	}))
	defer srv.Close()
	defer close(block)
	_, stream := apis(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, _, err := stream.QueryRange(ctx, "up", v1.Range{Start: time.Unix(0, 0), End: time.Unix(60, 0), Step: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's deadline", err)
	}
}

func TestQueryRangeSendsTheQueryAsAForm(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = strings.Join([]string{r.Method, r.URL.Path, r.PostForm.Get("query"), r.PostForm.Get("start"), r.PostForm.Get("end"), r.PostForm.Get("step")}, " ")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	_, stream := apis(t, srv.URL)
	_, _, _, err := stream.QueryRange(context.Background(), `up{job="a b"}`, v1.Range{Start: time.Unix(1700000000, 500e6), End: time.Unix(1700000060, 0), Step: 7500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if want := `POST /api/v1/query_range up{job="a b"} 1700000000.5 1700000060 7.5`; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
}
