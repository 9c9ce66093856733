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
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Trace backends a data source can read.
const (
	TracesNone   = "none"
	TracesTempo  = "tempo"
	TracesJaeger = "jaeger"
)

// jsonData is the data source's jsonData; its names are a contract with provisioning files.
type jsonData struct {
	TracesBackend         string          `json:"tracesBackend"`
	TracesURL             string          `json:"tracesUrl"`
	TracesBasicAuthUser   string          `json:"tracesBasicAuthUser"`
	TracesDatasourceUID   string          `json:"tracesDatasourceUid"`
	ScrapeInterval        string          `json:"scrapeInterval"`
	LabelMatchers         string          `json:"labelMatchers"`
	InstanceLabel         string          `json:"instanceLabel"`
	ModelLabel            string          `json:"modelLabel"`
	ServiceName           string          `json:"serviceName"`
	SpanName              string          `json:"spanName"`
	SpanInstanceAttribute string          `json:"spanInstanceAttribute"`
	SpanModelAttribute    string          `json:"spanModelAttribute"`
	Thresholds            json.RawMessage `json:"thresholds"`
	// Timeout is Grafana's HTTP setting, in seconds: its editor writes a number, a
	// provisioning file may write a string.
	Timeout json.RawMessage `json:"timeout"`
}

// settingsDefaults are the jsonData settings' defaults (DESIGN §7), their one Go home: LoadSettings
// fills them in, and SettingsDefaultsJSON writes them for the front end's editor to be tested
// against. Each value comes from the package that owns its vocabulary.
var settingsDefaults = jsonData{
	TracesBackend:         TracesNone,
	ScrapeInterval:        "15s",
	InstanceLabel:         signals.DefaultLabels.Instance,
	ModelLabel:            signals.DefaultLabels.Model,
	ServiceName:           vllm.DefaultServiceName,
	SpanName:              vllm.DefaultSpanName,
	SpanInstanceAttribute: vllm.DefaultInstanceAttr,
	SpanModelAttribute:    vllm.DefaultModelAttr,
}

//go:generate go run ../cmd/settings-defaults -o testdata/settings_defaults.json

// SettingsDefaultsJSON is the jsonData defaults as one JSON object by their jsonData names, the
// settings without a default left out, as the file testdata/settings_defaults.json holds it
// for the front end's test of its SETTINGS_DEFAULTS (go generate writes the file;
// TestSettingsDefaultsFile fails while it is stale).
func SettingsDefaultsJSON() ([]byte, error) {
	raw, err := json.Marshal(settingsDefaults)
	if err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	set := map[string]any{}
	for k, v := range all {
		if v != nil && v != "" {
			set[k] = v
		}
	}
	out, err := json.MarshalIndent(set, "", "  ")
	return append(out, '\n'), err
}

// Settings are a data source's validated settings.
type Settings struct {
	PrometheusURL         string
	TracesBackend         string
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
	// Timeout bounds every call to Prometheus and to the trace backend.
	Timeout time.Duration

	tracesBasicAuthPassword string
	tracesBearerToken       string
}

// LoadSettings reads and validates a data source's settings; the error says which setting is
// wrong and how to fix it.
func LoadSettings(s backend.DataSourceInstanceSettings) (Settings, error) {
	var j jsonData
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &j); err != nil {
			return Settings{}, fmt.Errorf("the data source's jsonData is not valid: %w", err)
		}
	}
	out := Settings{
		PrometheusURL:           strings.TrimRight(s.URL, "/"),
		TracesBackend:           orDefault(j.TracesBackend, settingsDefaults.TracesBackend),
		TracesURL:               strings.TrimRight(j.TracesURL, "/"),
		TracesBasicAuthUser:     j.TracesBasicAuthUser,
		TracesDatasourceUID:     j.TracesDatasourceUID,
		Labels:                  signals.Labels{Instance: orDefault(j.InstanceLabel, settingsDefaults.InstanceLabel), Model: orDefault(j.ModelLabel, settingsDefaults.ModelLabel)},
		ServiceName:             orDefault(j.ServiceName, settingsDefaults.ServiceName),
		SpanName:                orDefault(j.SpanName, settingsDefaults.SpanName),
		SpanInstanceAttribute:   orDefault(j.SpanInstanceAttribute, settingsDefaults.SpanInstanceAttribute),
		SpanModelAttribute:      orDefault(j.SpanModelAttribute, settingsDefaults.SpanModelAttribute),
		tracesBasicAuthPassword: s.DecryptedSecureJSONData["tracesBasicAuthPassword"],
		tracesBearerToken:       s.DecryptedSecureJSONData["tracesBearerToken"],
	}
	if err := checkURL("Prometheus URL (the data source URL)", out.PrometheusURL); err != nil {
		return Settings{}, err
	}
	switch out.TracesBackend {
	case TracesNone:
	case TracesTempo, TracesJaeger:
		if err := checkURL("traces URL (tracesUrl)", out.TracesURL); err != nil {
			return Settings{}, err
		}
	default:
		return Settings{}, fmt.Errorf("tracesBackend %q is not one of tempo, jaeger or none", out.TracesBackend)
	}
	scrape := orDefault(j.ScrapeInterval, settingsDefaults.ScrapeInterval)
	d, err := time.ParseDuration(scrape)
	if err != nil || d <= 0 {
		return Settings{}, fmt.Errorf("scrapeInterval %q is not a positive duration such as 15s or 1m", scrape)
	}
	out.ScrapeInterval = d
	if out.Timeout, err = parseTimeout(j.Timeout); err != nil {
		return Settings{}, err
	}
	if out.LabelMatchers, err = signals.ParseMatchers(j.LabelMatchers); err != nil {
		return Settings{}, fmt.Errorf("labelMatchers: %w", err)
	}
	if out.Thresholds, err = diagnosis.ParseThresholds(j.Thresholds); err != nil {
		return Settings{}, fmt.Errorf("thresholds: %w", err)
	}
	for name, v := range map[string]string{"instanceLabel": out.Labels.Instance, "modelLabel": out.Labels.Model} {
		if !signals.ValidLabelName(v) {
			return Settings{}, fmt.Errorf("%s %q is not a valid Prometheus label name", name, v)
		}
	}
	return out, nil
}

// DefaultTimeout is the backend call timeout when the settings have none: the SDK's default.
var DefaultTimeout = httpclient.DefaultTimeoutOptions.Timeout

// parseTimeout reads jsonData.timeout. The SDK reads only the number form and leaves a string
// such as "5" as no timeout at all, so a call could hang forever: both forms are read here.
// Empty, null and 0 mean the default, as in Grafana's editor.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	v := strings.TrimSpace(string(raw))
	if v == "" || v == "null" || v == `""` {
		return DefaultTimeout, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v = strings.TrimSpace(s)
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs < 0 || math.IsNaN(secs) || secs > maxTimeoutSeconds {
		return 0, fmt.Errorf("timeout %s is not a number of seconds between 0 and %d, such as 30", clipRaw(string(raw)), maxTimeoutSeconds)
	}
	if secs == 0 {
		return DefaultTimeout, nil
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// maxTimeoutSeconds is a day: anything longer is a typo, and would overflow a Duration if large enough.
const maxTimeoutSeconds = 86400

func clipRaw(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

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
