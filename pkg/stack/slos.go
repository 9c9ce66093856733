package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// ProvisionedSLOs is the slos setting (jsonData.slos) of the provisioned data source with this
// uid, as JSON: tests give the plugin the objectives the demo stack's dashboards and alert rules
// are written for, not a copy of them.
func ProvisionedSLOs(uid string) (json.RawMessage, error) {
	file := filepath.Join(RepoRoot(), "provisioning", "datasources", "vllm.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var f struct {
		Datasources []struct {
			UID      string `yaml:"uid"`
			JSONData struct {
				SLOs []map[string]any `yaml:"slos"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	for _, d := range f.Datasources {
		if d.UID == uid {
			return json.Marshal(d.JSONData.SLOs)
		}
	}
	return nil, fmt.Errorf("%s provisions no data source with uid %q", filepath.Base(file), uid)
}
