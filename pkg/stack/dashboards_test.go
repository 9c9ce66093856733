package stack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// minSchemaVersion is the dashboard schema of Grafana 12.0, the oldest Grafana the plugin
// supports (plugin.json): a newer schema would not load there.
const minSchemaVersion = 41

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *DatasourceRef  `json:"datasource"`
	IncludeAll bool            `json:"includeAll"`
	Multi      bool            `json:"multi"`
	// AllowCustom and Refresh are Grafana's allowCustomValue and refresh (1: on the dashboard's load).
	AllowCustom bool `json:"allowCustomValue"`
	Refresh     int  `json:"refresh"`
	Options     []struct {
		Value string `json:"value"`
	} `json:"options"`
}

type panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Datasource  *DatasourceRef  `json:"datasource"`
	Targets     []any           `json:"targets"`
	Panels      []panel         `json:"panels"`
	FieldConfig json.RawMessage `json:"fieldConfig"`
}

type dashboard struct {
	file          string
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	files, err := DashboardFiles(path("dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	var out []dashboard
	for _, f := range files {
		var d dashboard
		readJSON(t, f, &d)
		d.file = f[strings.LastIndex(f, "/")+1:]
		out = append(out, d)
	}
	return out
}

func (d dashboard) variable(name string) (variable, bool) {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v, true
		}
	}
	return variable{}, false
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

func TestDashboardsHaveStableUniqueUIDsAndLoadInGrafana12(t *testing.T) {
	seen := map[string]string{}
	for _, d := range loadDashboards(t) {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid %q, title %q: both are needed for stable links", d.file, d.UID, d.Title)
		}
		if prev, ok := seen[d.UID]; ok {
			t.Errorf("%s and %s share uid %s", prev, d.file, d.UID)
		}
		seen[d.UID] = d.file
		if d.SchemaVersion != minSchemaVersion {
			t.Errorf("%s: schemaVersion %d, want %d (Grafana 12.0)", d.file, d.SchemaVersion, minSchemaVersion)
		}
		ids := map[int]bool{}
		for _, p := range allPanels(d.Panels) {
			if p.ID == 0 || ids[p.ID] {
				t.Errorf("%s: panel %q has id %d, missing or repeated", d.file, p.Title, p.ID)
			}
			ids[p.ID] = true
		}
	}
}

func TestDashboardVariablesComeFromThePlugin(t *testing.T) {
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			ds, ok := d.variable("datasource")
			if !ok || ds.Type != "datasource" || string(ds.Query) != `"`+PluginID+`"` {
				t.Errorf("want a datasource variable over %s, got %+v", PluginID, ds)
			}
			for name, kind := range map[string]string{"instance": "instances", "model": "models"} {
				v, ok := d.variable(name)
				if !ok {
					t.Errorf("no %s variable", name)
					continue
				}
				var q struct {
					Kind string `json:"kind"`
				}
				if err := json.Unmarshal(v.Query, &q); err != nil || q.Kind != kind {
					t.Errorf("%s: query %s, want the variable editor's {\"kind\":%q}", name, v.Query, kind)
				}
				if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" || !v.IncludeAll || !v.Multi {
					t.Errorf("%s: want a multi-value query variable with All, on ${datasource}; got %+v", name, v)
				}
			}
		})
	}
}

var variableRef = regexp.MustCompile(`\$\{?([A-Za-z_]\w*)`)

// undefinedVariables lists the $names of s that are neither dashboard variables nor Grafana's own.
func undefinedVariables(d dashboard, s string) []string {
	var out []string
	for _, m := range variableRef.FindAllStringSubmatch(s, -1) {
		if strings.HasPrefix(m[1], "__") {
			continue
		}
		if _, ok := d.variable(m[1]); !ok {
			out = append(out, m[1])
		}
	}
	return out
}

// checkQuery says why a plugin query of a dashboard would not run as meant, or "": beyond its
// schema (DecodeQuery), the names and values the plugin knows.
func checkQuery(q plugin.Query) string {
	switch q := q.(type) {
	case plugin.SignalsQuery:
		if len(q.Signals) == 0 {
			return "names no signal"
		}
		for _, s := range q.Signals {
			if _, ok := signals.Lookup(series.Signal(s)); !ok {
				return fmt.Sprintf("unknown signal %q (known: %s)", s, strings.Join(signals.Names(), ", "))
			}
		}
	case plugin.DiagnosisQuery:
		if _, err := diagnosis.Rules(q.Rules, nil); err != nil {
			return err.Error()
		}
	case plugin.RequestsQuery:
		if q.Limit <= 0 || q.MinTTFT < 0 {
			return fmt.Sprintf("limit %d, minTtft %v", q.Limit, q.MinTTFT)
		}
	case plugin.ExplainQuery:
		if q.TraceID == "" {
			return "names no trace id"
		}
	case plugin.VerdictQuery:
		if q.BaselineFrom == "" || q.BaselineTo == "" {
			return "has no baseline window"
		}
	case plugin.SLOQuery:
		// The dashboards are written for the provisioned objectives.
		raw, err := ProvisionedSLOs("vllm")
		if err != nil {
			return err.Error()
		}
		objectives, err := slo.Parse(raw)
		if err != nil {
			return err.Error()
		}
		for _, name := range q.SLOs {
			if !slices.ContainsFunc(objectives, func(o slo.Objective) bool { return o.Name == name }) {
				return fmt.Sprintf("names objective %q, which the provisioned data source lacks", name)
			}
		}
	}
	return ""
}

func TestEveryDashboardQueryIsOneThePluginAccepts(t *testing.T) {
	targets, err := Targets(path("dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	dashboards := map[string]dashboard{}
	for _, d := range loadDashboards(t) {
		dashboards[d.file] = d
	}
	var plugins int
	for _, tg := range targets {
		if tg.Datasource.Type != PluginID {
			continue
		}
		plugins++
		where := fmt.Sprintf("%s, %s, target %s", tg.File, tg.Panel, tg.RefID)
		if tg.Datasource.UID != "${datasource}" {
			t.Errorf("%s: data source uid %q; use the ${datasource} variable", where, tg.Datasource.UID)
		}
		q, err := DecodeQuery(tg.JSON)
		if err != nil {
			t.Errorf("%s: not a query of the plugin's schema: %v", where, err)
			continue
		}
		if why := checkQuery(q); why != "" {
			t.Errorf("%s: %s query %s", where, q.QueryType(), why)
		}
		if undef := undefinedVariables(dashboards[tg.File], string(tg.JSON)); len(undef) > 0 {
			t.Errorf("%s: uses undefined variables %v", where, undef)
		}
	}
	if plugins == 0 {
		t.Fatal("no dashboard queries the plugin")
	}
}

func TestOnlyTraceViewsQueryOtherDatasources(t *testing.T) {
	targets, err := Targets(path("dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	dashboards := map[string]dashboard{}
	for _, d := range loadDashboards(t) {
		dashboards[d.file] = d
	}
	for _, tg := range targets {
		if tg.Datasource.Type == PluginID {
			continue
		}
		where := fmt.Sprintf("%s, %s", tg.File, tg.Panel)
		if tg.PanelType != "traces" {
			t.Errorf("%s: a %s panel queries %+v; only trace views may use another data source", where, tg.PanelType, tg.Datasource)
			continue
		}
		// The uid is a variable of the plugin's kind traceDatasource on the dashboard's vLLM
		// data source: the trace data source of its settings (a provisioned one here:
		// TestProvisionedPluginDatasourcesHaveValidSettings), so that an imported dashboard
		// reads its own data sources' rather than uids provisioned here.
		var v variable
		m := variableRef.FindStringSubmatch(tg.Datasource.UID)
		if m != nil {
			v, _ = dashboards[tg.File].variable(m[1])
		}
		var q struct {
			Kind string `json:"kind"`
		}
		if len(v.Query) > 0 {
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Errorf("%s: $%s's query %s: %v", where, v.Name, v.Query, err)
			}
		}
		if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" || q.Kind != "traceDatasource" {
			t.Errorf("%s: trace data source %q is not a query variable of kind traceDatasource on ${datasource}", where, tg.Datasource.UID)
		}
	}
}

func TestAnnotationsAreFindingsOfTheDiagnosis(t *testing.T) {
	targets, err := Targets(path("dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range loadDashboards(t) {
		var found bool
		for _, tg := range targets {
			if tg.File != d.file || tg.PanelType != "annotation" {
				continue
			}
			q, err := DecodeQuery(tg.JSON)
			if e, ok := q.(plugin.ExplainQuery); ok && e.Format == plugin.ExplainAnnotation {
				continue // the drill-down's own request, drawn as a region
			}
			if dq, ok := q.(plugin.DiagnosisQuery); err != nil || !ok || (dq.Format != "" && dq.Format != plugin.FormatFindings) {
				t.Errorf("%s: %s is not a diagnosis findings query (%#v, %v)", d.file, tg.Panel, q, err)
			}
			found = true
		}
		if !found {
			t.Errorf("%s: the findings are not drawn as annotations", d.file)
		}
	}
}

func TestStateTimelinesMapEveryRuleState(t *testing.T) {
	states := []diagnosis.State{diagnosis.OK, diagnosis.Pending, diagnosis.Firing, diagnosis.InsufficientData, diagnosis.NotApplicable}
	var timelines int
	for _, d := range loadDashboards(t) {
		for _, p := range allPanels(d.Panels) {
			if p.Type != "state-timeline" {
				continue
			}
			timelines++
			var fc struct {
				Defaults struct {
					Mappings []struct {
						Type    string                     `json:"type"`
						Options map[string]json.RawMessage `json:"options"`
					} `json:"mappings"`
				} `json:"defaults"`
			}
			if err := json.Unmarshal(p.FieldConfig, &fc); err != nil {
				t.Fatal(err)
			}
			for _, s := range states {
				var mapped bool
				for _, m := range fc.Defaults.Mappings {
					_, ok := m.Options[s.String()]
					mapped = mapped || (m.Type == "value" && ok)
				}
				if !mapped {
					t.Errorf("%s, %s: state %q has no colour", d.file, p.Title, s)
				}
			}
		}
	}
	if timelines == 0 {
		t.Fatal("no dashboard shows the rules' states over time")
	}
}

func TestRequestLinksOpenTheProvisionedDrillDown(t *testing.T) {
	byUID := map[string]dashboard{}
	for _, d := range loadDashboards(t) {
		byUID[d.UID] = d
	}
	noInfo := func(series.Signal) frames.SignalInfo { return frames.SignalInfo{} }
	table := frames.Requests(nil, frames.TraceLinks{DatasourceUID: "jaeger"}, noInfo, "", nil)
	var links int
	for _, f := range table.Fields {
		if f.Config == nil {
			continue
		}
		for _, l := range f.Config.Links {
			rest, ok := strings.CutPrefix(l.URL, "/d/")
			if !ok {
				continue
			}
			links++
			u, err := url.Parse("/d/" + rest)
			if err != nil {
				t.Fatalf("link %q: %v", l.URL, err)
			}
			uid := strings.Split(strings.TrimPrefix(u.Path, "/d/"), "/")[0]
			target, ok := byUID[uid]
			if !ok {
				t.Errorf("link %q opens dashboard %q, which is not provisioned", l.Title, uid)
				continue
			}
			for key := range u.Query() {
				if name, ok := strings.CutPrefix(key, "var-"); ok {
					if _, ok := target.variable(name); !ok {
						t.Errorf("link %q sets var-%s, which %s does not define", l.Title, name, target.file)
					}
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("the requests table links to no dashboard")
	}
}
