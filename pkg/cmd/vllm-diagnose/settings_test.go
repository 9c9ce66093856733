package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestSettingsAsGrafanaWritesThem reads the settings the flags build with the SDK's and the
// plugin's own readers: the names are Grafana's and the plugin's (README, Settings), so a wrong
// one shows here.
func TestSettingsAsGrafanaWritesThem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := connection{
		prometheus: "https://mimir:8080/prometheus", jaeger: "http://jaeger:16686",
		promUser: "ops", headers: []string{"X-Scope-OrgID=tenant-1", "X-Secret=@" + write("hdr", "from-file\n")},
		caFile: write("ca.pem", "-----BEGIN CERTIFICATE-----\n"), skipVerify: true,
		tracesUser: "tr", tracesTokenFile: write("token", "tok\n"),
		labelMatchers: `{job="vllm"}`, thresholdsFile: write("th.json", `{"kv_cache_saturated": {"kv_usage": 0.9}}`),
		scrapeInterval: "30s", instanceLabel: "pod",
	}
	s, err := c.instanceSettings(env(map[string]string{envPromPassword: "pw", envPromToken: "bearer-tok", envTracesPassword: "trpw"}))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := s.HTTPClientOptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if opts.BasicAuth == nil || opts.BasicAuth.User != "ops" || opts.BasicAuth.Password != "pw" {
		t.Fatalf("basic auth %+v", opts.BasicAuth)
	}
	for name, want := range map[string]string{"X-Scope-OrgID": "tenant-1", "X-Secret": "from-file", "Authorization": "Bearer bearer-tok"} {
		if got := opts.Header.Get(name); got != want {
			t.Fatalf("header %s = %q, want %q", name, got, want)
		}
	}
	if opts.TLS == nil || !opts.TLS.InsecureSkipVerify || !strings.HasPrefix(opts.TLS.CACertificate, "-----BEGIN CERTIFICATE") {
		t.Fatalf("TLS %+v", opts.TLS)
	}
	ps, err := plugin.LoadSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	if ps.TracesBackend != plugin.TracesJaeger || ps.TracesURL != "http://jaeger:16686" || ps.TracesBasicAuthUser != "tr" ||
		ps.ScrapeInterval != 30*time.Second || ps.Labels.Instance != "pod" || len(ps.LabelMatchers) != 1 ||
		ps.Thresholds["kv_cache_saturated"]["kv_usage"] != 0.9 {
		t.Fatalf("the plugin reads %+v", ps)
	}
	for k, want := range map[string]string{"tracesBasicAuthPassword": "trpw", "tracesBearerToken": "tok"} {
		if s.DecryptedSecureJSONData[k] != want {
			t.Fatalf("secure %s = %q, want %q", k, s.DecryptedSecureJSONData[k], want)
		}
	}
	if strings.Contains(string(s.JSONData), "pw") || strings.Contains(string(s.JSONData), "tok") {
		t.Fatalf("a secret is in jsonData: %s", s.JSONData)
	}
}

func TestSettingsErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		c    connection
		says string
	}{
		{"no Prometheus", connection{}, "--prometheus is required"},
		{"two trace backends", connection{prometheus: "http://p:9090", tempo: "http://t:3200", jaeger: "http://j:16686"}, "choose one"},
		{"a header without a value", connection{prometheus: "http://p:9090", headers: []string{"X-Scope-OrgID"}}, "NAME=VALUE"},
		{"a missing password file", connection{prometheus: "http://p:9090", promUser: "u", promPasswordFile: "/nonexistent/pw"}, "/nonexistent/pw"},
		{"thresholds that are not JSON", connection{prometheus: "http://p:9090", thresholdsFile: "settings_test.go"}, "is not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.c.instanceSettings(env(nil))
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one naming %q", err, c.says)
			}
		})
	}
}

func TestTimeRange(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		o          options
		from, to   time.Time
		errSays    string
		errSaysNot string
	}{
		{name: "since", o: options{since: 30 * time.Minute}, from: now.Add(-30 * time.Minute), to: now},
		{name: "absolute", o: options{from: "2026-08-01T10:00:00Z", to: "2026-08-01T11:00:00Z"}, from: now.Add(-2 * time.Hour), to: now.Add(-time.Hour)},
		{name: "relative, to now", o: options{from: "now-2h"}, from: now.Add(-2 * time.Hour), to: now},
		{name: "a bad time", o: options{from: "noon"}, errSays: `--from "noon" is not a time`},
		{name: "a bad end", o: options{from: "now-1h", to: "later"}, errSays: `--to "later" is not a time`},
		{name: "from after to", o: options{from: "now-1h", to: "now-2h"}, errSays: "is not before --to"},
		{name: "to without from", o: options{since: time.Hour, to: "now"}, errSays: "--to needs --from"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := &rootCommand{opts: c.o, now: func() time.Time { return now }}
			from, to, err := rc.timeRange()
			if c.errSays != "" {
				if err == nil || !strings.Contains(err.Error(), c.errSays) {
					t.Fatalf("error %v, want %q", err, c.errSays)
				}
				return
			}
			if err != nil || !from.Equal(c.from) || !to.Equal(c.to) {
				t.Fatalf("%s → %s (%v), want %s → %s", from, to, err, c.from, c.to)
			}
		})
	}
}

// TestChanges follows one rule through the states a watch sees at its ticks.
func TestChanges(t *testing.T) {
	labels := data.Labels{"instance": "i:8000", "model_name": "m"}
	frame := func(states ...string) data.Frames {
		return data.Frames{data.NewFrame("timeline", data.NewField("time", nil, make([]time.Time, len(states))),
			data.NewField("kv_cache_saturated", labels, states))}
	}
	last := map[watchKey]string{}
	var got []string
	for _, tick := range [][]string{{"ok"}, {"ok", "pending"}, {"insufficient_data"}, {"firing"}, {"firing"}, {"ok"}, {"ok"}, {"pending"}, {"ok"}} {
		for _, tr := range changes(last, frame(tick...), time.Time{}) {
			got = append(got, tr.Previous+"→"+tr.State)
		}
	}
	want := []string{"ok→pending", "pending→firing", "firing→resolved", "ok→pending", "pending→resolved"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

func TestReasonText(t *testing.T) {
	for in, want := range map[string]string{
		"prefill_blocking has insufficient data on 127.0.0.1:8000 (m) at 9 of 1419 steps: fewer than 20 requests in the window": "fewer than 20 requests in the window",
		"spec_decode_inefficient is not applicable on a:1 (m): spec_acceptance_rate is unavailable: off":                        "spec_acceptance_rate is unavailable: off",
		"no colon here": "no colon here",
	} {
		if got := reasonText(in); got != want {
			t.Errorf("reasonText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\nb   c\n"); got != "a; b c" {
		t.Fatalf("%q", got)
	}
}
