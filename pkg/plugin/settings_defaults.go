package plugin

import (
	"encoding/json"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"
)

//go:generate go run gen_settings_defaults.go

// SettingsDefaultsFile is where the front end reads EditorDefaults, relative to this package.
const SettingsDefaultsFile = "../../src/settings_defaults.json"

// EditorDefaults are the settings an empty jsonData gets, by their jsonData names: the config
// editor shows them as placeholders. They are read from LoadSettings itself, so the front end
// cannot show a default the backend does not apply. `go generate ./pkg/plugin` writes them to
// SettingsDefaultsFile; TestSettingsDefaultsFileIsCurrent fails while that file is stale.
func EditorDefaults() map[string]string {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{URL: "http://prometheus:9090"})
	if err != nil {
		panic("the settings of an empty jsonData do not load: " + err.Error())
	}
	return map[string]string{
		"scrapeInterval":        model.Duration(s.ScrapeInterval).String(),
		"instanceLabel":         s.Labels.Instance,
		"modelLabel":            s.Labels.Model,
		"serviceName":           s.ServiceName,
		"spanName":              s.SpanName,
		"spanInstanceAttribute": s.SpanInstanceAttribute,
		"spanModelAttribute":    s.SpanModelAttribute,
	}
}

// EditorDefaultsJSON is SettingsDefaultsFile's content: sorted keys, indented as prettier
// formats the front end's JSON, so that its lint check passes on the generated file.
func EditorDefaultsJSON() []byte {
	b, err := json.MarshalIndent(EditorDefaults(), "", "  ")
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return append(b, '\n')
}
