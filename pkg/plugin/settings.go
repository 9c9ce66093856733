package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/internal/clip"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// JSONData is the data source's jsonData, the plugin's settings; Grafana's own HTTP settings
// (httpHeaderName1, tlsSkipVerify, …) sit beside them, and the SDK reads those. The names are a
// contract with provisioning files (README, Settings): `go generate ./pkg/plugin` writes the
// settings' JSON schema and TypeScript type from this declaration.
type JSONData struct {
	// The trace backend that holds vLLM's request spans.
	TracesBackend TracesBackend `json:"tracesBackend,omitempty"`
	// Base URL of Tempo (port 3200) or of Jaeger's query API (port 16686).
	TracesURL string `json:"tracesUrl,omitempty"`
	// User for the trace backend; the password is secureJsonData.tracesBasicAuthPassword.
	TracesBasicAuthUser string `json:"tracesBasicAuthUser,omitempty"`
	// Grafana's own Tempo or Jaeger data source, for the "open trace" links.
	TracesDatasourceUID string `json:"tracesDatasourceUid,omitempty"`
	// The Prometheus scrape interval of the vLLM targets; rate windows are at least 4 times it.
	ScrapeInterval string `json:"scrapeInterval,omitempty"`
	// Extra PromQL matchers for every vLLM series, such as {job="vllm"}.
	LabelMatchers string `json:"labelMatchers,omitempty"`
	// The Prometheus label that names an instance.
	InstanceLabel string `json:"instanceLabel,omitempty"`
	// The Prometheus label that names a model.
	ModelLabel string `json:"modelLabel,omitempty"`
	// The service.name of vLLM spans.
	ServiceName string `json:"serviceName,omitempty"`
	// The name of the span of one vLLM request.
	SpanName string `json:"spanName,omitempty"`
	// The span or resource attribute whose value equals the Prometheus instance label.
	SpanInstanceAttribute string `json:"spanInstanceAttribute,omitempty"`
	// The span attribute that names the model (current vLLM spans lack it: the instance's only
	// model is used).
	SpanModelAttribute string `json:"spanModelAttribute,omitempty"`
	// Rule id → parameter → number, overriding the matrix's defaults.
	Thresholds ThresholdsJSON `json:"thresholds,omitempty,omitzero"`
	// Grafana's HTTP timeout setting, in seconds: its editor writes a number, a provisioning file
	// may write a string; it bounds the trace backend's calls too.
	Timeout TimeoutJSON `json:"timeout,omitempty,omitzero"`
	// Service-level objectives, read by the slo query type.
	SLOs SLOsJSON `json:"slos,omitempty,omitzero"`
}

// ThresholdsJSON is the thresholds setting as written, read by diagnosis.ParseThresholds, whose
// errors name the rule and parameter.
type ThresholdsJSON struct{ json.RawMessage }

// TimeoutJSON is the timeout setting as written, read by parseTimeout.
type TimeoutJSON struct{ json.RawMessage }

// SLOsJSON is the slos setting as written, a list of slo.Spec, read by slo.Parse. It is kept
// raw so that a bad objective fails the health check and the slo queries only, not the data
// source's other queries.
type SLOsJSON struct{ json.RawMessage }

// settingsDefaults are the jsonData settings' defaults, their one Go home: LoadSettings fills
// them in, and the settings' schema (src/schema/) and the front end's SETTINGS_DEFAULTS
// (src/types.gen.ts) are generated from them. Each value comes from the package that owns its
// vocabulary.
var settingsDefaults = JSONData{
	TracesBackend:         TracesNone,
	ScrapeInterval:        "15s",
	InstanceLabel:         signals.DefaultLabels.Instance,
	ModelLabel:            signals.DefaultLabels.Model,
	ServiceName:           vllm.DefaultServiceName,
	SpanName:              vllm.DefaultSpanName,
	SpanInstanceAttribute: vllm.DefaultInstanceAttr,
	SpanModelAttribute:    vllm.DefaultModelAttr,
}

// The plugin's own secureJsonData keys (Grafana's HTTP settings have theirs).
const (
	secureTracesPassword = "tracesBasicAuthPassword"
	secureTracesToken    = "tracesBearerToken"
)

// secureKeys lists them with what each holds, for the settings' schema.
var secureKeys = []EnumValue{
	{Value: secureTracesPassword, Doc: "the trace backend's basic auth password"},
	{Value: secureTracesToken, Doc: "a bearer token for the trace backend"},
}

// Settings are a data source's validated settings.
type Settings struct {
	PrometheusURL         string
	TracesBackend         TracesBackend
	TracesURL             string
	TracesBasicAuthUser   string
	TracesDatasourceUID   string
	ScrapeInterval        time.Duration
	LabelMatchers         []*labels.Matcher
	Labels                signals.Labels
	ServiceName           string
	SpanName              string
	SpanInstanceAttribute string
	SpanModelAttribute    string
	Thresholds            diagnosis.Thresholds
	// SLOs are the service-level objectives; SLOsErr says why they could not be read (the
	// health check and the slo queries report it, the other queries work on).
	SLOs    []slo.Objective
	SLOsErr error
	// Timeout bounds every call to Prometheus and to the trace backend.
	Timeout time.Duration

	tracesBasicAuthPassword string
	tracesBearerToken       string
}

// LoadSettings reads and validates a data source's settings; the error says which setting is
// wrong and how to fix it.
func LoadSettings(s backend.DataSourceInstanceSettings) (Settings, error) {
	var j JSONData
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &j); err != nil {
			return Settings{}, fmt.Errorf("the data source's jsonData is not valid: %w", err)
		}
	}
	out := Settings{
		PrometheusURL:           strings.TrimRight(s.URL, "/"),
		TracesBackend:           TracesBackend(orDefault(string(j.TracesBackend), string(settingsDefaults.TracesBackend))),
		TracesURL:               strings.TrimRight(j.TracesURL, "/"),
		TracesBasicAuthUser:     j.TracesBasicAuthUser,
		TracesDatasourceUID:     j.TracesDatasourceUID,
		Labels:                  signals.Labels{Instance: orDefault(j.InstanceLabel, settingsDefaults.InstanceLabel), Model: orDefault(j.ModelLabel, settingsDefaults.ModelLabel)},
		ServiceName:             orDefault(j.ServiceName, settingsDefaults.ServiceName),
		SpanName:                orDefault(j.SpanName, settingsDefaults.SpanName),
		SpanInstanceAttribute:   orDefault(j.SpanInstanceAttribute, settingsDefaults.SpanInstanceAttribute),
		SpanModelAttribute:      orDefault(j.SpanModelAttribute, settingsDefaults.SpanModelAttribute),
		tracesBasicAuthPassword: s.DecryptedSecureJSONData[secureTracesPassword],
		tracesBearerToken:       s.DecryptedSecureJSONData[secureTracesToken],
	}
	if err := checkURL("Prometheus URL (the data source URL)", out.PrometheusURL); err != nil {
		return Settings{}, err
	}
	tb, err := backendOf(out.TracesBackend)
	if err != nil {
		return Settings{}, err
	}
	if tb.source != nil {
		if err := checkURL("traces URL (tracesUrl)", out.TracesURL); err != nil {
			return Settings{}, err
		}
	}
	scrape := orDefault(j.ScrapeInterval, settingsDefaults.ScrapeInterval)
	d, err := time.ParseDuration(scrape)
	if err != nil || d <= 0 {
		return Settings{}, fmt.Errorf("scrapeInterval %q is not a positive duration such as 15s or 1m", scrape)
	}
	// Steps are whole seconds (plan.Step): a finer scrape interval would make them zero.
	if d < time.Second {
		return Settings{}, fmt.Errorf("scrapeInterval %q is under 1s: write the Prometheus scrape interval of the vLLM targets in seconds or more, such as 1s or 15s", scrape)
	}
	out.ScrapeInterval = d
	if out.Timeout, err = parseTimeout(j.Timeout.RawMessage); err != nil {
		return Settings{}, err
	}
	if out.LabelMatchers, err = signals.ParseMatchers(j.LabelMatchers); err != nil {
		return Settings{}, fmt.Errorf("labelMatchers: %w", err)
	}
	if out.Thresholds, err = diagnosis.ParseThresholds(j.Thresholds.RawMessage); err != nil {
		return Settings{}, err // its every message names the thresholds setting
	}
	if out.SLOs, err = slo.Parse(j.SLOs.RawMessage); err != nil {
		out.SLOsErr = err
	}
	for name, v := range map[string]string{"instanceLabel": out.Labels.Instance, "modelLabel": out.Labels.Model} {
		if !signals.ValidLabelName(v) {
			return Settings{}, fmt.Errorf("%s %q is not a valid Prometheus label name", name, v)
		}
	}
	return out, nil
}

// defaultTimeout is the backend call timeout when the settings have none: the SDK's default.
var defaultTimeout = httpclient.DefaultTimeoutOptions.Timeout

// parseTimeout reads jsonData.timeout. The SDK reads only the number form and leaves a string
// such as "5" as no timeout at all, so a call could hang forever: both forms are read here.
// Empty, null and 0 mean the default, as in Grafana's editor.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	v := strings.TrimSpace(string(raw))
	if v == "" || v == "null" || v == `""` {
		return defaultTimeout, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v = strings.TrimSpace(s)
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs < 0 || math.IsNaN(secs) || secs > maxTimeoutSeconds {
		return 0, fmt.Errorf("timeout %s is not a number of seconds between 0 and %d, such as 30", clip.To(string(raw), 40), maxTimeoutSeconds)
	}
	if secs == 0 {
		return defaultTimeout, nil
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// maxTimeoutSeconds is a day: anything longer is a typo, and would overflow a Duration if large enough.
const maxTimeoutSeconds = 86400

func checkURL(what, raw string) error {
	if raw == "" {
		return fmt.Errorf("the %s is empty: set it to the server's base URL, such as http://prometheus:9090", what)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL could hold a password
		}
		return fmt.Errorf("the %s is not a valid URL: %v", what, err)
	}
	// Not quoted: without a scheme, "user:password@host" parses as an opaque URL that
	// Redacted does not hide.
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the %s is not an http or https URL: write it as http://host:port or https://host:port", what)
	}
	return nil
}

// redacted is a URL as messages may show it: without a password written into it.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}
