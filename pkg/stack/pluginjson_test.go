package stack

import (
	"os"
	"regexp"
	"testing"
)

// pluginManifest is the part of plugin.json that Grafana's loader reads for a backend data
// source.
type pluginManifest struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Name        string `json:"name"`
	Backend     bool   `json:"backend"`
	Executable  string `json:"executable"`
	Alerting    bool   `json:"alerting"`
	Annotations bool   `json:"annotations"`
	Metrics     bool   `json:"metrics"`
	Info        struct {
		Logos struct {
			Small string `json:"small"`
			Large string `json:"large"`
		} `json:"logos"`
		Version string `json:"version"`
	} `json:"info"`
	Dependencies struct {
		GrafanaDependency string `json:"grafanaDependency"`
	} `json:"dependencies"`
}

// Grafana's plugin id pattern (its plugin.schema.json): org-name-type.
var pluginIDPattern = regexp.MustCompile(`^[0-9a-z]+-([0-9a-z]+-)?(app|panel|datasource)$`)

func TestPluginJSONIsWhatGrafanasLoaderNeeds(t *testing.T) {
	var m pluginManifest
	readJSON(t, path("plugin.json"), &m)
	if m.ID != PluginID || !pluginIDPattern.MatchString(m.ID) {
		t.Errorf("id %q: want %s, matching Grafana's id pattern", m.ID, PluginID)
	}
	if m.Type != "datasource" || m.Name != "vLLM Diagnosis" {
		t.Errorf("type %q, name %q", m.Type, m.Name)
	}
	if !m.Backend || m.Executable != "gpx_vllm" {
		t.Errorf("backend %v, executable %q: Grafana starts dist/gpx_vllm_<os>_<arch>", m.Backend, m.Executable)
	}
	if !m.Alerting || !m.Annotations || !m.Metrics {
		t.Errorf("alerting %v, annotations %v, metrics %v: all three are used", m.Alerting, m.Annotations, m.Metrics)
	}
	// The front end takes React's JSX runtime from Grafana, which shares it with plugins from 12.0.10,
	// 12.1.7, 12.2.5 and 12.3.0 on (README, "Build and install"): the range admits those releases
	// and every later one, Grafana 13 included, and no earlier one.
	if want := ">=12.0.10 <12.1 || >=12.1.7 <12.2 || >=12.2.5"; m.Dependencies.GrafanaDependency != want {
		t.Errorf("grafanaDependency %q: want %s", m.Dependencies.GrafanaDependency, want)
	}
	for _, logo := range []string{m.Info.Logos.Small, m.Info.Logos.Large} {
		if _, err := os.Stat(path("src", logo)); err != nil {
			t.Errorf("logo %s: %v (the build copies src/img into dist/img)", logo, err)
		}
	}
}
