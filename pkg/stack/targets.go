package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// PluginID is the data source type that dashboards and provisioning files name.
const PluginID = "seed-vllm-datasource"

// DatasourceRef is a panel's or target's data source, as dashboards store it.
type DatasourceRef struct {
	Type string `json:"type,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Target is one query of a dashboard: a panel's target, or an annotation's (PanelID 0).
type Target struct {
	// File is the dashboard's file name under dashboards/.
	File         string
	DashboardUID string
	// Panel is the panel's title, or "annotation: <name>" for an annotation query.
	Panel      string
	PanelID    int
	PanelType  string
	Datasource DatasourceRef
	RefID      string
	// JSON is the target as stored, template variables not yet replaced.
	JSON json.RawMessage
}

// RepoRoot is the repository's root directory, found from this source file's location.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("stack: cannot locate the repository from the caller's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// DashboardFiles lists the dashboard JSON files of dir, sorted.
func DashboardFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboard JSON files in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

type dashboardFile struct {
	UID         string `json:"uid"`
	Annotations struct {
		List []struct {
			Name       string          `json:"name"`
			BuiltIn    int             `json:"builtIn"`
			Datasource DatasourceRef   `json:"datasource"`
			Target     json.RawMessage `json:"target"`
		} `json:"list"`
	} `json:"annotations"`
	Panels []panelFile `json:"panels"`
}

type panelFile struct {
	ID         int               `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	Datasource *DatasourceRef    `json:"datasource"`
	Targets    []json.RawMessage `json:"targets"`
	Panels     []panelFile       `json:"panels"`
}

type targetHead struct {
	RefID      string         `json:"refId"`
	Datasource *DatasourceRef `json:"datasource"`
}

// Targets returns every query of every dashboard in dir: each panel's targets (rows' nested
// panels included), then each annotation query; Grafana's built-in annotation is left out.
// A target without a data source of its own uses its panel's.
func Targets(dir string) ([]Target, error) {
	files, err := DashboardFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Target
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var d dashboardFile
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		name := filepath.Base(f)
		var walk func(ps []panelFile) error
		walk = func(ps []panelFile) error {
			for _, p := range ps {
				for _, t := range p.Targets {
					var h targetHead
					if err := json.Unmarshal(t, &h); err != nil {
						return fmt.Errorf("%s: panel %q: %w", name, p.Title, err)
					}
					ds := h.Datasource
					if ds == nil {
						ds = p.Datasource
					}
					if ds == nil {
						return fmt.Errorf("%s: panel %q target %q has no data source", name, p.Title, h.RefID)
					}
					out = append(out, Target{File: name, DashboardUID: d.UID, Panel: p.Title, PanelID: p.ID, PanelType: p.Type,
						Datasource: *ds, RefID: h.RefID, JSON: t})
				}
				if err := walk(p.Panels); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(d.Panels); err != nil {
			return nil, err
		}
		for _, a := range d.Annotations.List {
			if a.BuiltIn == 1 {
				continue
			}
			var h targetHead
			if err := json.Unmarshal(a.Target, &h); err != nil {
				return nil, fmt.Errorf("%s: annotation %q: %w", name, a.Name, err)
			}
			out = append(out, Target{File: name, DashboardUID: d.UID, Panel: "annotation: " + a.Name, PanelType: "annotation",
				Datasource: a.Datasource, RefID: h.RefID, JSON: a.Target})
		}
	}
	return out, nil
}

// grafanaQuery holds the fields Grafana itself adds to every stored query, beside the
// plugin's own query model.
type grafanaQuery struct {
	plugin.Query
	RefID         string          `json:"refId"`
	Datasource    json.RawMessage `json:"datasource"`
	Hide          bool            `json:"hide"`
	Key           string          `json:"key"`
	IntervalMs    float64         `json:"intervalMs"`
	MaxDataPoints int64           `json:"maxDataPoints"`
}

// DecodeQuery reads a stored query strictly: a field that is neither the plugin's query model
// (pkg/plugin.Query) nor one Grafana adds is an error, so a renamed field cannot slip through.
func DecodeQuery(raw json.RawMessage) (plugin.Query, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var q grafanaQuery
	if err := dec.Decode(&q); err != nil {
		return plugin.Query{}, err
	}
	return q.Query, nil
}
