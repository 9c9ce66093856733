package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// Environment variables that carry secrets: a flag's value shows in `ps` and in shell history,
// so secrets come from the environment or from files only.
const (
	envPromPassword   = "VLLM_DIAGNOSE_PROMETHEUS_PASSWORD"
	envPromToken      = "VLLM_DIAGNOSE_PROMETHEUS_TOKEN"
	envTracesPassword = "VLLM_DIAGNOSE_TRACES_PASSWORD"
	envTracesToken    = "VLLM_DIAGNOSE_TRACES_TOKEN"
)

// connection is how to reach and read the backends: the flags that become the data source's
// settings.
type connection struct {
	prometheus, tempo, jaeger string

	promUser, promPasswordFile, promTokenFile       string
	tracesUser, tracesPasswordFile, tracesTokenFile string
	headers                                         []string
	caFile                                          string
	skipVerify                                      bool

	labelMatchers, thresholdsFile, scrapeInterval string
	instanceLabel, modelLabel                     string
	serviceName, spanName                         string
	spanInstanceAttr, spanModelAttr               string

	// slos are the objectives (jsonData.slos) the slo command read from its file.
	slos json.RawMessage
}

// secret reads a secret from its file flag, else from its environment variable; a file's
// trailing newline is not part of the secret.
func secret(file, env string, getenv func(string) string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("cannot read the secret file %s: %v", file, errors.Unwrap(err))
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return getenv(env), nil
}

// instanceSettings builds the settings Grafana would send for a data source configured like
// these flags, with the names Grafana and the plugin persist (README, Settings): the Prometheus
// URL as the data source URL, Grafana's standard HTTP settings (basic auth, httpHeaderNameN with
// secure httpHeaderValueN, tlsAuthWithCACert with secure tlsCACert, tlsSkipVerify), and the
// plugin's jsonData (its typed plugin.JSONData) and secureJsonData.
func (c connection) instanceSettings(getenv func(string) string) (backend.DataSourceInstanceSettings, error) {
	var s backend.DataSourceInstanceSettings
	if c.prometheus == "" {
		return s, errors.New("--prometheus is required: the base URL of Prometheus (or Thanos, Mimir, VictoriaMetrics), such as http://prometheus:9090")
	}
	if c.tempo != "" && c.jaeger != "" {
		return s, errors.New("--tempo and --jaeger both given: choose one trace backend")
	}
	pd := plugin.JSONData{TracesBackend: plugin.TracesNone, LabelMatchers: c.labelMatchers, ScrapeInterval: c.scrapeInterval,
		InstanceLabel: c.instanceLabel, ModelLabel: c.modelLabel, ServiceName: c.serviceName, SpanName: c.spanName,
		SpanInstanceAttribute: c.spanInstanceAttr, SpanModelAttribute: c.spanModelAttr, TracesBasicAuthUser: c.tracesUser}
	switch {
	case c.tempo != "":
		pd.TracesBackend, pd.TracesURL = plugin.TracesTempo, c.tempo
	case c.jaeger != "":
		pd.TracesBackend, pd.TracesURL = plugin.TracesJaeger, c.jaeger
	}
	if c.thresholdsFile != "" {
		raw, err := os.ReadFile(c.thresholdsFile)
		if err != nil {
			return s, fmt.Errorf("cannot read the thresholds file %s: %v", c.thresholdsFile, errors.Unwrap(err))
		}
		if !json.Valid(raw) {
			return s, fmt.Errorf("the thresholds file %s is not JSON: write rule id → parameter → number, such as {\"kv_cache_saturated\": {\"kv_usage\": 0.9}}", c.thresholdsFile)
		}
		pd.Thresholds = plugin.ThresholdsJSON{RawMessage: raw}
	}
	if len(c.slos) > 0 {
		pd.SLOs = plugin.SLOsJSON{RawMessage: c.slos}
	}
	// Grafana's own HTTP settings sit beside the plugin's in jsonData.
	jd, err := grafanaJSONData(pd)
	if err != nil {
		return s, err
	}
	sec := map[string]string{}

	var headers [][2]string
	for _, h := range c.headers {
		name, value, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return s, fmt.Errorf("--header %q is not NAME=VALUE (or NAME=@FILE to read the value from a file)", h)
		}
		if file, ok := strings.CutPrefix(value, "@"); ok {
			v, err := secret(file, "", getenv)
			if err != nil {
				return s, err
			}
			value = v
		}
		headers = append(headers, [2]string{strings.TrimSpace(name), value})
	}
	token, err := secret(c.promTokenFile, envPromToken, getenv)
	if err != nil {
		return s, err
	}
	if token != "" {
		headers = append(headers, [2]string{"Authorization", "Bearer " + token})
	}
	for i, h := range headers {
		jd[fmt.Sprintf("httpHeaderName%d", i+1)] = h[0]
		sec[fmt.Sprintf("httpHeaderValue%d", i+1)] = h[1]
	}

	if c.promUser != "" {
		s.BasicAuthEnabled, s.BasicAuthUser = true, c.promUser
		if sec["basicAuthPassword"], err = secret(c.promPasswordFile, envPromPassword, getenv); err != nil {
			return s, err
		}
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return s, fmt.Errorf("cannot read the CA file %s: %v", c.caFile, errors.Unwrap(err))
		}
		jd["tlsAuthWithCACert"], sec["tlsCACert"] = true, string(pem)
	}
	if c.skipVerify {
		jd["tlsSkipVerify"] = true
	}
	if sec["tracesBasicAuthPassword"], err = secret(c.tracesPasswordFile, envTracesPassword, getenv); err != nil {
		return s, err
	}
	if sec["tracesBearerToken"], err = secret(c.tracesTokenFile, envTracesToken, getenv); err != nil {
		return s, err
	}
	raw, err := json.Marshal(jd)
	if err != nil {
		return s, err
	}
	s.UID, s.Name, s.Type = "vllm-diagnose", "vLLM Diagnosis (vllm-diagnose)", "seed-vllm-datasource"
	s.URL, s.JSONData, s.DecryptedSecureJSONData, s.Updated = c.prometheus, raw, sec, time.Now()
	return s, nil
}

// grafanaJSONData is the plugin's jsonData as a JSON object, to which Grafana's own HTTP settings
// are added by their names.
func grafanaJSONData(pd plugin.JSONData) (map[string]any, error) {
	raw, err := json.Marshal(pd)
	if err != nil {
		return nil, err
	}
	jd := map[string]any{}
	return jd, json.Unmarshal(raw, &jd)
}
