package plugin

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestSettingsDefaultsFile: testdata/settings_defaults.json, which the front end's test of its
// SETTINGS_DEFAULTS reads, is what the Go side fills in. It only reads the file: go generate
// (pkg/cmd/settings-defaults) writes it.
func TestSettingsDefaultsFile(t *testing.T) {
	const path = "testdata/settings_defaults.json"
	want, err := SettingsDefaultsJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: it is\n%s\nbut the Go defaults are\n%s\nregenerate it with go generate ./pkg/plugin (or go run ./pkg/cmd/settings-defaults from the repository's root) and commit it", path, got, want)
	}
}

// TestSettingsDefaultsAreLoaded: the exported defaults are the ones LoadSettings fills in.
func TestSettingsDefaultsAreLoaded(t *testing.T) {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090"})
	if err != nil {
		t.Fatal(err)
	}
	if scrape, _ := time.ParseDuration(settingsDefaults.ScrapeInterval); s.ScrapeInterval != scrape {
		t.Errorf("scrapeInterval: loaded %s, exported %q", s.ScrapeInterval, settingsDefaults.ScrapeInterval)
	}
	for name, c := range map[string][2]string{
		"tracesBackend":         {s.TracesBackend, settingsDefaults.TracesBackend},
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
