package contract

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/experimental/pluginschema"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// TestFilesAreCurrent: the committed schema and TypeScript files are what pkg/plugin declares.
// It only reads them: go generate writes them.
func TestFilesAreCurrent(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(Root(), name))
		if err != nil {
			t.Errorf("%s: %v; write it with %s and commit it", name, err, Regenerate)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: pkg/plugin's query models, enumerations or settings changed; regenerate it with %s and commit it", name, Regenerate)
		}
	}
}

// TestTheSDKReadsTheFiles: the SDK's schema provider, as Grafana runs it, loads the files:
// every query type, the text form and the settings.
func TestTheSDKReadsTheFiles(t *testing.T) {
	s, err := pluginschema.NewCompositeFileSchemaProvider(os.DirFS(filepath.Join(Root(), "src", "schema"))).Get(APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	if s.QueryTypes == nil || s.SettingsSchema.IsZero() {
		t.Fatalf("read %+v: want query types and settings", s)
	}
	var names []string
	for _, def := range s.QueryTypes.Items {
		names = append(names, def.Name)
	}
	var want []string
	for _, m := range plugin.QueryModels() {
		want = append(want, string(m.QueryType))
	}
	if want = append(want, TextQueryName); !slices.Equal(names, want) {
		t.Errorf("query types %v, want %v", names, want)
	}
	var secure []string
	for _, v := range s.SettingsSchema.SecureValues {
		secure = append(secure, v.Key)
	}
	if !slices.Equal(secure, []string{"tracesBasicAuthPassword", "tracesBearerToken"}) {
		t.Errorf("secure values %v", secure)
	}
}

func validator(t *testing.T) *Validator {
	t.Helper()
	v, err := NewValidator(Root())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const ds = `"datasource": {"type": "seed-vllm-datasource", "uid": "${datasource}"}, "refId": "A"`

func TestValidatorReadsStoredQueriesAsThePluginDoes(t *testing.T) {
	v := validator(t)
	for _, c := range []struct {
		name  string
		query string
		says  string // in the error; empty: valid
	}{
		{"a signals query", `{"queryType": "signals", "signals": ["ttft_p99"], "instance": "$instance"}`, ""},
		{"a diagnosis query in each format", `{"queryType": "diagnosis", "format": "recommendation", "rules": ["past_the_knee"]}`, ""},
		{"findings by severity", `{"queryType": "diagnosis", "headlineOnly": true, "severities": ["critical"]}`, ""},
		{"an explain annotation", `{"queryType": "explain", "format": "annotation", "traceId": "$traceId"}`, ""},
		{"a verdict with optimisations", `{"queryType": "verdict", "baselineFrom": "now-7d", "optimisations": ["spec_decode"]}`, ""},
		{"a verdict checking a rule's promise", `{"queryType": "verdict", "baselineFrom": "now-7d", "rule": "kv_cache_saturated"}`, ""},
		{"the text form without a queryType", `{"expr": "explain 4bf92f3577b34da6a3ce929d0e0e4736"}`, ""},
		{"a misspelt field", `{"queryType": "diagnosis", "fromat": "timeline"}`, "fromat"},
		{"a field of another query type", `{"queryType": "signals", "traceId": "abc"}`, "traceId"},
		{"an unknown diagnosis format", `{"queryType": "diagnosis", "format": "table"}`, "format"},
		{"a diagnosis format on explain", `{"queryType": "explain", "format": "timeline"}`, "format"},
		{"an unknown severity", `{"queryType": "diagnosis", "severities": ["fatal"]}`, "severities"},
		{"an unknown optimisation", `{"queryType": "verdict", "optimisations": ["fp4"]}`, "optimisations"},
		{"a field of the wrong type", `{"queryType": "requests", "limit": "100"}`, "limit"},
		{"an unknown queryType", `{"queryType": "slow"}`, "queryType"},
		{"neither queryType nor expr", `{"signals": ["ttft_p99"]}`, "queryType"},
		{"another data source's type", `{"queryType": "signals", "datasource": {"type": "prometheus"}}`, "datasource"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := c.query[:len(c.query)-1] + ", " + ds + "}"
			if strings.Contains(c.query, `"datasource"`) {
				q = c.query[:len(c.query)-1] + `, "refId": "A"}`
			}
			err := v.Target(json.RawMessage(q))
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.says != "" && err == nil:
				t.Fatal("accepted")
			case c.says != "" && !strings.Contains(err.Error(), c.says):
				t.Fatalf("error %q does not name %q", err, c.says)
			}
		})
	}
}

func TestAStoredTargetCarriesNoRequestFields(t *testing.T) {
	v := validator(t)
	q := json.RawMessage(`{"queryType": "diagnosis", "format": "alert", "intervalMs": 15000, "maxDataPoints": 43200, ` + ds + `}`)
	if err := v.Request(q); err != nil {
		t.Errorf("as a request: %v", err)
	}
	if err := v.Target(q); err == nil {
		t.Error("as a dashboard target: accepted with intervalMs and maxDataPoints")
	}
}

// Every query the Go models write, each query type's defaults and each field set, is valid:
// the schema is the models'.
func TestEveryModelWritesValidQueries(t *testing.T) {
	v := validator(t)
	sc := plugin.Scope{Instance: "a", Model: "m"}
	var queries []plugin.Query
	for _, m := range plugin.QueryModels() {
		queries = append(queries, m.Defaults)
	}
	for _, q := range append(queries, []plugin.Query{
		plugin.SignalsQuery{Scope: sc, Signals: []string{"ttft_p99"}},
		plugin.DiagnosisQuery{Scope: sc, Format: plugin.FormatTimeline, Rules: []string{"kv_cache_saturated"}, HeadlineOnly: true,
			Severities: []diagnosis.Severity{diagnosis.Warning}, AllRules: true},
		plugin.RequestsQuery{Scope: sc, AnomalousOnly: true, MinTTFT: 1.5, Limit: 20},
		plugin.ExplainQuery{Scope: sc, TraceID: "abc", Format: plugin.ExplainAnnotation},
		plugin.VerdictQuery{Scope: sc, BaselineFrom: "now-7d", BaselineTo: "now-6d", Optimisations: verdict.All},
	}...) {
		raw, err := plugin.MarshalQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		stored := append(raw[:len(raw)-1:len(raw)-1], []byte(", "+ds+"}")...)
		if err := v.Target(stored); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestSettingsAgainstTheSchema(t *testing.T) {
	v := validator(t)
	for _, c := range []struct {
		name, url, jsonData string
		valid               bool
	}{
		{"the defaults", "http://prometheus:9090", `{}`, true},
		{"Grafana's own HTTP settings beside the plugin's", "http://p:9090", `{"tracesBackend": "tempo", "tracesUrl": "http://tempo:3200", "httpHeaderName1": "X", "timeout": "5"}`, true},
		{"thresholds", "http://p:9090", `{"thresholds": {"kv_cache_saturated": {"kv_usage": 0.9}}}`, true},
		{"an unknown trace backend", "http://p:9090", `{"tracesBackend": "zipkin"}`, false},
		{"a threshold that is not a number", "http://p:9090", `{"thresholds": {"kv_cache_saturated": {"kv_usage": "high"}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := v.Settings(c.url, json.RawMessage(c.jsonData)); (err == nil) != c.valid {
				t.Errorf("valid %t, error %v", c.valid, err)
			}
		})
	}
	if !slices.Contains(v.JSONDataNames(), "tracesBackend") || slices.Contains(v.JSONDataNames(), "httpHeaderName1") {
		t.Errorf("jsonData names %v", v.JSONDataNames())
	}
}

// TestEveryStringTypeOfTheModelsIsAnEnumeration: a field of a named string type (a format, a
// severity, a trace backend) has fixed values, so the schema must list them: its type is one of
// plugin.Enumerations.
func TestEveryStringTypeOfTheModelsIsAnEnumeration(t *testing.T) {
	known := map[reflect.Type]bool{}
	for _, e := range plugin.Enumerations() {
		known[e.Type] = true
		if len(e.Values) == 0 {
			t.Errorf("%s has no values", e.Type)
		}
	}
	types := []reflect.Type{plugin.SettingsContract().JSONData, reflect.TypeFor[plugin.TextQuery]()}
	for _, m := range plugin.QueryModels() {
		types = append(types, m.Model)
	}
	var walk func(owner string, st reflect.Type)
	walk = func(owner string, st reflect.Type) {
		for f := range st.Fields() {
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			switch {
			case f.Anonymous && ft.Kind() == reflect.Struct:
				walk(owner, ft)
			case ft.Kind() == reflect.String && ft.PkgPath() != "" && !known[ft]:
				t.Errorf("%s.%s is a %s, which plugin.Enumerations does not list", owner, f.Name, ft)
			}
		}
	}
	for _, m := range types {
		walk(m.Name(), m)
	}
}
