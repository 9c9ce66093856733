package plugin

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestSettingsDefaultsAreLoaded: the defaults the contract publishes (pkg/plugin/contract writes
// them into the settings' schema and the front end's SETTINGS_DEFAULTS) are the ones
// LoadSettings fills in.
func TestSettingsDefaultsAreLoaded(t *testing.T) {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090"})
	if err != nil {
		t.Fatal(err)
	}
	if scrape, _ := time.ParseDuration(settingsDefaults.ScrapeInterval); s.ScrapeInterval != scrape {
		t.Errorf("scrapeInterval: loaded %s, exported %q", s.ScrapeInterval, settingsDefaults.ScrapeInterval)
	}
	for name, c := range map[string][2]string{
		"tracesBackend":         {string(s.TracesBackend), string(settingsDefaults.TracesBackend)},
		"instanceLabel":         {s.Labels.Instance, settingsDefaults.InstanceLabel},
		"modelLabel":            {s.Labels.Model, settingsDefaults.ModelLabel},
		"serviceName":           {s.ServiceName, settingsDefaults.ServiceName},
		"spanName":              {s.SpanName, settingsDefaults.SpanName},
		"spanInstanceAttribute": {s.SpanInstanceAttribute, settingsDefaults.SpanInstanceAttribute},
		"spanModelAttribute":    {s.SpanModelAttribute, settingsDefaults.SpanModelAttribute},
	} {
		if c[0] != c[1] {
			t.Errorf("%s: loaded %q, exported %q", name, c[0], c[1])
		}
	}
}
