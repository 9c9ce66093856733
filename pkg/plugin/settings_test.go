package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

func TestLoadSettingsDefaults(t *testing.T) {
	got, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"Prometheus URL without trailing slash", got.PrometheusURL, "http://prometheus:9090"},
		{"traces backend", got.TracesBackend, TracesNone},
		{"scrape interval", got.ScrapeInterval, 15 * time.Second},
		{"label matchers", len(got.LabelMatchers), 0},
		{"instance label", got.Labels.Instance, "instance"},
		{"model label", got.Labels.Model, vllm.LabelModelName},
		{"service name", got.ServiceName, vllm.DefaultServiceName},
		{"span name", got.SpanName, vllm.DefaultSpanName},
		{"span instance attribute", got.SpanInstanceAttribute, vllm.DefaultInstanceAttr},
		{"span model attribute", got.SpanModelAttribute, vllm.DefaultModelAttr},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLoadSettingsReadsJSONData(t *testing.T) {
	got, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "https://mimir.example/prometheus", JSONData: []byte(`{
		"tracesBackend": "jaeger", "tracesUrl": "http://jaeger:16686/", "scrapeInterval": "30s",
		"labelMatchers": "job=\"vllm\", namespace=~\"inference-.*\"", "instanceLabel": "pod", "modelLabel": "served_model"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got.TracesBackend != TracesJaeger || got.TracesURL != "http://jaeger:16686" || got.ScrapeInterval != 30*time.Second ||
		got.Labels.Instance != "pod" || got.Labels.Model != "served_model" {
		t.Errorf("settings %+v do not hold the jsonData", got)
	}
	want := []string{`job="vllm"`, `namespace=~"inference-.*"`}
	var printed []string
	for _, m := range got.LabelMatchers {
		printed = append(printed, m.String())
	}
	if strings.Join(printed, " ") != strings.Join(want, " ") {
		t.Errorf("label matchers %q, want %q", got.LabelMatchers, want)
	}
}

func TestLoadSettingsNamesTheInvalidSetting(t *testing.T) {
	const prom = "http://prometheus:9090"
	for _, c := range []struct {
		name     string
		url      string
		jsonData string
		says     []string
	}{
		{"empty Prometheus URL", "", `{}`, []string{"Prometheus URL", "empty", "http://prometheus:9090"}},
		{"Prometheus URL without scheme", "prometheus:9090", `{}`, []string{"Prometheus URL", "not an http or https URL"}},
		{"Prometheus URL of another scheme", "ftp://prometheus", `{}`, []string{"Prometheus URL", "http or https"}},
		{"unparsable Prometheus URL", "http://prom etheus:9090", `{}`, []string{"Prometheus URL", "not a valid URL"}},
		{"jsonData not an object", prom, `[1]`, []string{"jsonData"}},
		{"unknown traces backend", prom, `{"tracesBackend": "zipkin"}`, []string{"tracesBackend", `"zipkin"`, "none, tempo, jaeger"}},
		{"traces backend in capitals", prom, `{"tracesBackend": "Tempo", "tracesUrl": "http://tempo:3200"}`, []string{"tracesBackend", `"Tempo"`, "none, tempo, jaeger"}},
		{"traces backend without URL", prom, `{"tracesBackend": "tempo"}`, []string{"tracesUrl", "empty"}},
		{"traces URL not http", prom, `{"tracesBackend": "jaeger", "tracesUrl": "jaeger:16686"}`, []string{"tracesUrl", "http or https"}},
		{"scrape interval not a duration", prom, `{"scrapeInterval": "15"}`, []string{"scrapeInterval", `"15"`, "such as 15s"}},
		{"scrape interval not positive", prom, `{"scrapeInterval": "-15s"}`, []string{"scrapeInterval", "positive"}},
		{"scrape interval under a second", prom, `{"scrapeInterval": "400ms"}`, []string{"scrapeInterval", `"400ms"`, "under 1s", "such as 1s or 15s"}},
		{"label matchers not PromQL", prom, `{"labelMatchers": "{job=}"}`, []string{"labelMatchers", "{job=}"}},
		{"label matchers that choose a metric", prom, `{"labelMatchers": "{__name__=\"up\"}"}`, []string{"labelMatchers", "metric name"}},
		{"instance label not a label name", prom, `{"instanceLabel": "pod-name"}`, []string{"instanceLabel", `"pod-name"`}},
		{"model label not a label name", prom, `{"modelLabel": "1model"}`, []string{"modelLabel", `"1model"`}},
		{"timeout not a number", prom, `{"timeout": "soon"}`, []string{"timeout", `"soon"`, "seconds"}},
		{"timeout negative", prom, `{"timeout": -5}`, []string{"timeout", "-5"}},
		{"timeout of years", prom, `{"timeout": 1e12}`, []string{"timeout", "between 0 and 86400"}},
		{"thresholds of an unknown rule", prom, `{"thresholds": {"no_such_rule": {"x": 1}}}`, []string{"thresholds", "no_such_rule"}},
		{"threshold out of range, named once", prom, `{"thresholds": {"kv_cache_saturated": {"kv_usage": 7}}}`, []string{"thresholds", "thresholds.kv_cache_saturated.kv_usage: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadSettings(backend.DataSourceInstanceSettings{URL: c.url, JSONData: []byte(c.jsonData)})
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if n := strings.Count(err.Error(), c.says[0]); n > 1 {
				t.Errorf("error %q names %q %d times", err, c.says[0], n)
			}
		})
	}
}

func TestLoadSettingsNeverPrintsSecrets(t *testing.T) {
	const secret = "hunter2-s3cret"
	secure := map[string]string{
		"basicAuthPassword":       secret,
		"httpHeaderValue1":        secret,
		"tracesBasicAuthPassword": secret,
		"tracesBearerToken":       secret,
	}
	for _, c := range []struct {
		name     string
		url      string
		jsonData string
	}{
		{"password in a Prometheus URL of another scheme", "ftp://admin:" + secret + "@prometheus", `{}`},
		{"password in an unparsable Prometheus URL", "http://admin:" + secret + "@prom etheus", `{}`},
		{"password in a traces URL without scheme", "http://prometheus:9090", `{"tracesBackend": "tempo", "tracesUrl": "admin:` + secret + `@tempo"}`},
		{"password in a traces URL of another scheme", "http://prometheus:9090", `{"tracesBackend": "tempo", "tracesUrl": "grpc://admin:` + secret + `@tempo"}`},
		{"secure settings beside an invalid setting", "http://prometheus:9090", `{"scrapeInterval": "soon"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadSettings(backend.DataSourceInstanceSettings{URL: c.url, JSONData: []byte(c.jsonData), DecryptedSecureJSONData: secure})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// TestTimeoutSetting: jsonData.timeout in seconds, as Grafana's editor writes it (a number)
// or a provisioning file may (a string, which the SDK alone would turn into no timeout).
func TestTimeoutSetting(t *testing.T) {
	for _, tc := range []struct {
		name, jsonData string
		want           time.Duration
	}{
		{"absent is the SDK's default", `{}`, defaultTimeout},
		{"null is the default", `{"timeout": null}`, defaultTimeout},
		{"0 is the default", `{"timeout": 0}`, defaultTimeout},
		{"a number of seconds", `{"timeout": 5}`, 5 * time.Second},
		{"a fraction of seconds", `{"timeout": 0.5}`, 500 * time.Millisecond},
		{"a string of seconds", `{"timeout": "7"}`, 7 * time.Second},
		{"an empty string is the default", `{"timeout": ""}`, defaultTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090", JSONData: []byte(tc.jsonData)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Timeout != tc.want {
				t.Errorf("timeout %s, want %s", got.Timeout, tc.want)
			}
		})
	}
}

func TestLoadSettingsKeepsBadObjectivesApart(t *testing.T) {
	for _, c := range []struct {
		name, jsonData string
		objectives     int
		says           string
	}{
		{"no objectives", `{}`, 0, ""},
		{"two objectives", `{"slos": [{"name": "a", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"},
			{"name": "b", "indicator": "availability", "objective": 0.999, "window": "7d"}]}`, 2, ""},
		{"a threshold of the wrong type", `{"slos": [{"name": "a", "indicator": "ttft", "threshold": "2s", "objective": 0.99, "window": "28d"}]}`, 0, "slos[0]"},
		{"an unknown indicator", `{"slos": [{"name": "a", "indicator": "goodput", "objective": 0.99, "window": "28d"}]}`, 0, `indicator "goodput"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090", JSONData: []byte(c.jsonData)})
			if err != nil {
				t.Fatalf("bad objectives fail the other settings: %v", err)
			}
			if len(got.SLOs) != c.objectives {
				t.Errorf("%d objectives, want %d", len(got.SLOs), c.objectives)
			}
			switch {
			case c.says == "" && got.SLOsErr != nil:
				t.Errorf("objectives error %v", got.SLOsErr)
			case c.says != "" && (got.SLOsErr == nil || !strings.Contains(got.SLOsErr.Error(), c.says)):
				t.Errorf("objectives error %v, want one saying %q", got.SLOsErr, c.says)
			}
		})
	}
}
