package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/plugin/contract"
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

// schema is the plugin's query and settings schema (src/schema, which pkg/plugin/contract keeps
// what pkg/plugin declares), read once.
var schema = sync.OnceValues(func() (*contract.Validator, error) { return contract.NewValidator(RepoRoot()) })

// DecodeQuery reads a query as a dashboard stores it (a panel's or an annotation's target): it
// must follow the plugin's query schema, so that a misspelt or renamed field, a format the
// query type does not have or another data source's type is an error, and is then read as the
// plugin reads it.
func DecodeQuery(raw json.RawMessage) (plugin.Query, error) {
	return decode(raw, (*contract.Validator).Target)
}

// DecodeRequestQuery reads a query as a request carries it, with a request's fields too
// (intervalMs, maxDataPoints): an alert rule's model, or the query of a trace-to-metrics link
// or a correlation. It checks and reads it as DecodeQuery does.
func DecodeRequestQuery(raw json.RawMessage) (plugin.Query, error) {
	return decode(raw, (*contract.Validator).Request)
}

func decode(raw json.RawMessage, check func(*contract.Validator, json.RawMessage) error) (plugin.Query, error) {
	v, err := schema()
	if err != nil {
		return nil, err
	}
	if err := check(v, raw); err != nil {
		return nil, err
	}
	return plugin.ParseQuery(raw, "")
}
