package stack

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// datasourceFile mirrors Grafana's data source provisioning file (apiVersion 1).
type datasourceFile struct {
	APIVersion        int `yaml:"apiVersion"`
	DeleteDatasources []struct {
		Name  string `yaml:"name"`
		OrgID int    `yaml:"orgId"`
	} `yaml:"deleteDatasources"`
	Prune       bool                `yaml:"prune"`
	Datasources []provisionedSource `yaml:"datasources"`
}

type provisionedSource struct {
	Name            string            `yaml:"name"`
	UID             string            `yaml:"uid"`
	Type            string            `yaml:"type"`
	Access          string            `yaml:"access"`
	OrgID           int               `yaml:"orgId"`
	URL             string            `yaml:"url"`
	User            string            `yaml:"user"`
	Database        string            `yaml:"database"`
	BasicAuth       bool              `yaml:"basicAuth"`
	BasicAuthUser   string            `yaml:"basicAuthUser"`
	WithCredentials bool              `yaml:"withCredentials"`
	IsDefault       bool              `yaml:"isDefault"`
	Version         int               `yaml:"version"`
	Editable        bool              `yaml:"editable"`
	JSONData        map[string]any    `yaml:"jsonData"`
	SecureJSONData  map[string]string `yaml:"secureJsonData"`
	Correlations    []correlation     `yaml:"correlations"`
}

// correlation mirrors Grafana's provisioned correlation (its CreateCorrelationCommand): the
// source is the data source it is provisioned under.
type correlation struct {
	TargetUID   string `yaml:"targetUID"`
	Label       string `yaml:"label"`
	Description string `yaml:"description"`
	Type        string `yaml:"type"`
	Config      struct {
		// Type is the config's former place of the correlation type, which Grafana still reads.
		Type            string         `yaml:"type"`
		Field           string         `yaml:"field"`
		Target          map[string]any `yaml:"target"`
		Transformations []struct {
			Type       string `yaml:"type"`
			Field      string `yaml:"field"`
			Expression string `yaml:"expression"`
			MapValue   string `yaml:"mapValue"`
		} `yaml:"transformations"`
	} `yaml:"config"`
}

// dashboardProviders mirrors Grafana's dashboard provider provisioning file.
type dashboardProviders struct {
	APIVersion int `yaml:"apiVersion"`
	Providers  []struct {
		Name                  string `yaml:"name"`
		OrgID                 int    `yaml:"orgId"`
		Folder                string `yaml:"folder"`
		FolderUID             string `yaml:"folderUid"`
		Type                  string `yaml:"type"`
		DisableDeletion       bool   `yaml:"disableDeletion"`
		AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
		UpdateIntervalSeconds int    `yaml:"updateIntervalSeconds"`
		Options               struct {
			Path                      string `yaml:"path"`
			FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

func loadDatasources(t *testing.T) []provisionedSource {
	t.Helper()
	var f datasourceFile
	readYAMLStrict(t, path("provisioning", "datasources", "vllm.yaml"), &f)
	if f.APIVersion != 1 {
		t.Fatalf("apiVersion %d, want 1", f.APIVersion)
	}
	return f.Datasources
}

func byType(ds []provisionedSource, typ string) []provisionedSource {
	var out []provisionedSource
	for _, d := range ds {
		if d.Type == typ {
			out = append(out, d)
		}
	}
	return out
}

func byUID(ds []provisionedSource, uid string) (provisionedSource, bool) {
	for _, d := range ds {
		if d.UID == uid {
			return d, true
		}
	}
	return provisionedSource{}, false
}

// grafanaExpand is what Grafana does to each provisioned string value: environment variables
// ($VAR, ${VAR}) are expanded and $$ is a literal $. The stack's Grafana sets none of the
// names these files could mention, so every variable expands to "".
func grafanaExpand(s string) string {
	parts := strings.Split(s, "$$")
	for i, p := range parts {
		parts[i] = os.Expand(p, func(string) string { return "" })
	}
	return strings.Join(parts, "$")
}

func expandAll(v any) any {
	switch x := v.(type) {
	case string:
		return grafanaExpand(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = expandAll(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expandAll(e)
		}
		return out
	}
	return v
}

func TestProvisionedPluginDatasourcesUseOnlySettingsThePluginReads(t *testing.T) {
	v, err := schema()
	if err != nil {
		t.Fatal(err)
	}
	names := v.JSONDataNames()
	sources := byType(loadDatasources(t), PluginID)
	if len(sources) == 0 {
		t.Fatalf("no data source of type %s is provisioned", PluginID)
	}
	for _, d := range sources {
		for key := range d.JSONData {
			if !slices.Contains(names, key) {
				t.Errorf("%s: jsonData.%s is not a setting of the plugin (its settings schema has %s)", d.Name, key, strings.Join(names, ", "))
			}
		}
		for key := range d.SecureJSONData {
			t.Errorf("%s: secureJsonData.%s: the demo stack needs no secret", d.Name, key)
		}
	}
}

func TestProvisionedPluginDatasourcesHaveValidSettings(t *testing.T) {
	v, err := schema()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range byType(loadDatasources(t), PluginID) {
		raw, err := json.Marshal(expandAll(d.JSONData))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Settings(grafanaExpand(d.URL), raw); err != nil {
			t.Errorf("%s: settings not of the plugin's settings schema: %v", d.Name, err)
		}
		s, err := plugin.LoadSettings(backend.DataSourceInstanceSettings{URL: grafanaExpand(d.URL), JSONData: raw})
		if err != nil {
			t.Errorf("%s: the plugin rejects its settings: %v", d.Name, err)
			continue
		}
		trace, ok := byUID(loadDatasources(t), s.TracesDatasourceUID)
		if !ok || trace.Type != string(s.TracesBackend) {
			t.Errorf("%s: tracesDatasourceUid %q is not a provisioned %s data source", d.Name, s.TracesDatasourceUID, s.TracesBackend)
		}
		if grafanaExpand(trace.URL) != s.TracesURL {
			t.Errorf("%s: tracesUrl %s differs from the %s data source's URL %s", d.Name, s.TracesURL, trace.Name, trace.URL)
		}
	}
}

func TestTraceDatasourcesLinkEachSpanToItsExplanation(t *testing.T) {
	all := loadDatasources(t)
	for _, typ := range []plugin.TracesBackend{plugin.TracesJaeger, plugin.TracesTempo} {
		sources := byType(all, string(typ))
		if len(sources) == 0 {
			t.Errorf("no %s data source is provisioned", typ)
		}
		for _, d := range sources {
			t.Run(d.Name, func(t *testing.T) {
				raw, err := json.Marshal(expandAll(d.JSONData["tracesToMetrics"]))
				if err != nil {
					t.Fatal(err)
				}
				var ttm struct {
					DatasourceUID      string `json:"datasourceUid"`
					SpanStartTimeShift string `json:"spanStartTimeShift"`
					SpanEndTimeShift   string `json:"spanEndTimeShift"`
					Queries            []struct {
						Name  string `json:"name"`
						Query string `json:"query"`
					} `json:"queries"`
				}
				if err := json.Unmarshal(raw, &ttm); err != nil {
					t.Fatalf("tracesToMetrics: %v", err)
				}
				if target, ok := byUID(all, ttm.DatasourceUID); !ok || target.Type != PluginID {
					t.Errorf("tracesToMetrics.datasourceUid %q is not a provisioned %s data source", ttm.DatasourceUID, PluginID)
				}
				if ttm.SpanStartTimeShift != "-2m" || ttm.SpanEndTimeShift != "2m" {
					t.Errorf("time shifts %q/%q; Grafana's trace-to-metrics link opens the span's time ± 2 minutes (README, Queries)", ttm.SpanStartTimeShift, ttm.SpanEndTimeShift)
				}
				if len(ttm.Queries) == 0 {
					t.Fatal("no trace-to-metrics query")
				}
				for _, q := range ttm.Queries {
					// Grafana fills ${__span.traceId} in the link; the plugin reads the text form.
					expr := strings.ReplaceAll(q.Query, "${__span.traceId}", "4bf92f3577b34da6a3ce929d0e0e4736")
					if expr == q.Query {
						t.Errorf("query %q (after Grafana's provisioning expansion) does not contain ${__span.traceId}; write $${__span.traceId} in the file", q.Query)
					}
					body, _ := json.Marshal(map[string]string{"refId": "A", "expr": expr})
					pq, err := DecodeRequestQuery(body)
					if err != nil {
						t.Errorf("the plugin rejects %q: %v", expr, err)
						continue
					}
					if e, ok := pq.(plugin.ExplainQuery); !ok || e.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
						t.Errorf("%q reads as %#v, want explain of the span's trace", expr, pq)
					}
				}
			})
		}
	}
}

func TestDatasourceURLsNameServicesOfTheStack(t *testing.T) {
	services := loadProject(t).ServiceNames()
	for _, d := range loadDatasources(t) {
		urls := []string{d.URL}
		if u, ok := d.JSONData["tracesUrl"].(string); ok {
			urls = append(urls, u)
		}
		for _, u := range urls {
			if h := hostOf(t, grafanaExpand(u)); !slices.Contains(services, h) {
				t.Errorf("%s: %s names host %q, which is not a service of docker-compose.yaml", d.Name, u, h)
			}
		}
	}
}

func TestDashboardProviderLoadsTheDashboardsFolder(t *testing.T) {
	var f dashboardProviders
	readYAMLStrict(t, path("provisioning", "dashboards", "vllm.yaml"), &f)
	if f.APIVersion != 1 || len(f.Providers) == 0 {
		t.Fatalf("apiVersion %d with %d providers", f.APIVersion, len(f.Providers))
	}
	for _, p := range f.Providers {
		if p.Type != "file" || p.Options.Path == "" {
			t.Errorf("provider %q: type %q, path %q; want a file provider with a path", p.Name, p.Type, p.Options.Path)
		}
	}
}

// TestTraceSourcesCorrelateToTheExplanation: each provisioned Jaeger and Tempo data source
// carries a correlation from its trace id to the vLLM data source its links already use, whose
// query the plugin reads as an explain query once Grafana fills in the trace id.
func TestTraceSourcesCorrelateToTheExplanation(t *testing.T) {
	all := loadDatasources(t)
	uids := map[string]bool{}
	for _, ds := range byType(all, "seed-vllm-datasource") {
		uids[ds.UID] = true
	}
	for _, typ := range []string{"jaeger", "tempo"} {
		for _, ds := range byType(all, typ) {
			t.Run(ds.Name, func(t *testing.T) {
				if len(ds.Correlations) != 1 {
					t.Fatalf("%d correlations, want one to the explanation", len(ds.Correlations))
				}
				c := ds.Correlations[0]
				link, _ := ds.JSONData["tracesToMetrics"].(map[string]any)
				if !uids[c.TargetUID] || c.TargetUID != link["datasourceUid"] {
					t.Errorf("target %q: want the vLLM data source of its trace-to-metrics link (%v)", c.TargetUID, link["datasourceUid"])
				}
				if c.Type != "query" || c.Config.Type != "query" || c.Config.Field != "traceID" || c.Label == "" {
					t.Errorf("correlation %+v: want a labelled query correlation on the field traceID", c)
				}
				expr, _ := c.Config.Target["expr"].(string)
				// Grafana expands $$ to $ in provisioned values, then fills ${traceID} per row.
				expr = strings.ReplaceAll(strings.ReplaceAll(expr, "$$", "$"), "${traceID}", "4bf92f3577b34da6a3ce929d0e0e4736")
				raw, _ := json.Marshal(map[string]string{"refId": "A", "expr": expr})
				q, err := DecodeRequestQuery(raw)
				if e, ok := q.(plugin.ExplainQuery); err != nil || !ok || e.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
					t.Errorf("target query %q reads as %+v, %v; want explain of the trace id", expr, q, err)
				}
			})
		}
	}
}
