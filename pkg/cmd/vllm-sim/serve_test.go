package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// freeBase finds a port with the next two free too: serve gives instance i the port plus i.
func freeBase(t *testing.T) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < 3 && ok; i++ {
			if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i)); err == nil {
				l2.Close()
			} else {
				ok = false
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no three consecutive free ports on 127.0.0.1")
	return 0
}

// TestServeExposesMetricsAndPushesSpans runs the demo stack's mode: every instance serves a
// /metrics that Prometheus 3 accepts (content type, promtool), labelled as vLLM labels them,
// and the finished requests' spans reach a real Jaeger, named by the instance's address.
func TestServeExposesMetricsAndPushesSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Jaeger and serves for several seconds")
	}
	jaeger := testbed.Jaeger(t)
	base := freeBase(t)
	listen := fmt.Sprintf("127.0.0.1:%d", base)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--scenario", "healthy", "--listen", listen, "--duration", "10m", "--otlp-endpoint", jaeger.OTLPGRPC}, &out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve ended with %v", err)
		}
	})

	metricsURL := "http://" + listen + "/metrics"
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(metricsURL)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
				t.Fatalf("Content-Type %q: Prometheus 3 refuses a scrape without text/plain; version=0.0.4", ct)
			}
			if bytes.Contains(body, []byte(vllm.TimeToFirstToken+"_count{")) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no vLLM metrics at %s within 30 s (last error %v)", metricsURL, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// vLLM's own names draw promtool's naming lints (colons, a histogram named _total): check
	// the format only.
	check := exec.Command(testbed.PromtoolPath(t), "check", "metrics", "--extended", "--lint=none")
	check.Stdin = bytes.NewReader(body)
	if msg, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, msg)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	running, ok := families[vllm.RequestsRunning]
	if !ok || len(running.Metric) != 1 {
		t.Fatalf("%s: want one series, got %v", vllm.RequestsRunning, running)
	}
	labels := map[string]string{}
	for _, l := range running.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels[vllm.LabelModelName] == "" || labels[vllm.LabelEngine] != "0" {
		t.Errorf("labels %v: want model_name and engine=\"0\" as vLLM sets them", labels)
	}

	q := url.Values{
		"query.service_name":   {vllm.DefaultServiceName},
		"query.start_time_min": {time.Now().Add(-10 * time.Minute).Format(time.RFC3339)},
		"query.start_time_max": {time.Now().Add(time.Minute).Format(time.RFC3339)},
		"query.num_traces":     {"100"},
	}
	deadline = time.Now().Add(45 * time.Second)
	var last string
	for {
		resp, err := http.Get(jaeger.QueryURL + "/api/v3/traces?" + q.Encode())
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(raw, []byte(`"`+vllm.ResourceInstanceID+`"`)) &&
				bytes.Contains(raw, []byte(listen)) {
				return
			}
			last = fmt.Sprintf("%d %.300s", resp.StatusCode, raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of instance %s reached Jaeger within 45 s; last answer: %s", listen, last)
		}
		time.Sleep(time.Second)
	}
}
