package stack

import (
	"cmp"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// fleetDashboards are the dashboards that open on a whole fleet.
var fleetDashboards = []string{"vllm-overview.json", "vllm-diagnosis.json"}

// fleetPanel is the part of a panel these tests read.
type fleetPanel struct {
	Type    string                   `json:"type"`
	Title   string                   `json:"title"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []json.RawMessage        `json:"targets"`
	Options json.RawMessage          `json:"options"`
	// Transformations are Grafana's, applied to the panel's answer in order.
	Transformations []struct {
		ID      string          `json:"id"`
		Options json.RawMessage `json:"options"`
	} `json:"transformations"`
	Field struct {
		Defaults  fieldConfig `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options string `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
}

type fieldConfig struct {
	Thresholds *thresholds `json:"thresholds"`
	Custom     struct {
		ThresholdsStyle struct {
			Mode string `json:"mode"`
		} `json:"thresholdsStyle"`
	} `json:"custom"`
}

type thresholds struct {
	Steps []struct {
		Value *float64 `json:"value"`
	} `json:"steps"`
}

type fleetDashboard struct {
	Panels      []fleetPanel `json:"panels"`
	Annotations struct {
		List []struct {
			Name      string          `json:"name"`
			BuiltIn   int             `json:"builtIn"`
			IconColor string          `json:"iconColor"`
			Enable    bool            `json:"enable"`
			Target    json.RawMessage `json:"target"`
		} `json:"list"`
	} `json:"annotations"`
}

func loadFleetDashboard(t *testing.T, file string) fleetDashboard {
	t.Helper()
	var d fleetDashboard
	readJSON(t, path("dashboards", file), &d)
	return d
}

func (p fleetPanel) queries(t *testing.T) []plugin.Query {
	t.Helper()
	return decodeQueries(t, p.Title, p.Targets)
}

// decodeQueries decodes a panel's targets as the plugin reads them.
func decodeQueries(t *testing.T, panel string, targets []json.RawMessage) []plugin.Query {
	t.Helper()
	var out []plugin.Query
	for _, raw := range targets {
		q, err := DecodeQuery(raw)
		if err != nil {
			t.Fatalf("%s: %v", panel, err)
		}
		out = append(out, q)
	}
	return out
}

func TestFleetDashboardsOpenOnTheFleetTable(t *testing.T) {
	for _, file := range fleetDashboards {
		d := loadFleetDashboard(t, file)
		var top *fleetPanel
		for i, p := range d.Panels {
			if p.Type != "row" && (top == nil || p.GridPos.Y < top.GridPos.Y) {
				top = &d.Panels[i]
			}
		}
		if top == nil {
			t.Fatalf("%s has no panel", file)
		}
		qs := top.queries(t)
		var q plugin.DiagnosisQuery
		if len(qs) == 1 {
			q, _ = qs[0].(plugin.DiagnosisQuery)
		}
		if top.Type != "table" || top.GridPos.W != 24 || q.Format != plugin.FormatFleet {
			t.Errorf("%s opens on %q (%s, %+v), not a full-width fleet table", file, top.Title, top.Type, qs)
		}
		if q.Instance != "$instance" || q.Model != "$model" {
			t.Errorf("%s: the fleet table does not follow the instance and model variables", file)
		}
	}
}

// sloPanelHeight is the least height of the SLOs row's panels: a table's header and six lines,
// such as two objectives on two instances and their fleet lines.
const sloPanelHeight = 8

// sloFormats are the formats the SLOs row of each fleet dashboard shows: the status and
// attribution tables, and on the overview the fleet's budget burn-down and goodput graphs.
var sloFormats = map[string][]plugin.SLOFormat{
	"vllm-overview.json":  {plugin.FormatSLOStatus, plugin.FormatSLOAttribution, plugin.FormatSLOBudget, plugin.FormatSLOGoodput},
	"vllm-diagnosis.json": {plugin.FormatSLOStatus, plugin.FormatSLOAttribution},
}

// sloGraphFormats are the slo formats answered as time series, drawn as graphs.
var sloGraphFormats = []plugin.SLOFormat{plugin.FormatSLOBudget, plugin.FormatSLOGoodput}

// Each fleet dashboard has an SLOs row of its sloFormats, each panel following the instance and
// model variables: full-width tables, and graphs at least half the width that draw the fleet
// series alone (fleetOnly).
func TestFleetDashboardsHaveAnSLOsRow(t *testing.T) {
	for _, file := range fleetDashboards {
		t.Run(file, func(t *testing.T) {
			d := loadFleetDashboard(t, file)
			rowY := -1
			for _, p := range d.Panels {
				if p.Type == "row" && p.Title == "SLOs" {
					rowY = p.GridPos.Y
				}
			}
			if rowY < 0 {
				t.Fatal("no SLOs row")
			}
			next := -1 // the next row's y, -1 when the SLOs row is the last
			for _, p := range d.Panels {
				if p.Type == "row" && p.GridPos.Y > rowY && (next < 0 || p.GridPos.Y < next) {
					next = p.GridPos.Y
				}
			}
			formats := map[plugin.SLOFormat]bool{}
			for _, p := range d.Panels {
				if p.Type == "row" || p.GridPos.Y <= rowY || (next >= 0 && p.GridPos.Y >= next) {
					continue
				}
				graph := false
				for _, q := range p.queries(t) {
					sq, ok := q.(plugin.SLOQuery)
					if !ok {
						t.Errorf("%q in the SLOs row asks a %s query", p.Title, q.QueryType())
						continue
					}
					f := cmp.Or(sq.Format, plugin.FormatSLOStatus)
					formats[f] = true
					graph = slices.Contains(sloGraphFormats, f)
					if sq.Instance != "$instance" || sq.Model != "$model" {
						t.Errorf("%q: instance %q, model %q; want $instance, $model", p.Title, sq.Instance, sq.Model)
					}
				}
				switch {
				case graph && (p.Type != "timeseries" || p.GridPos.W < 12 || p.GridPos.H < sloPanelHeight):
					t.Errorf("%q is a %s %dx%d, want a graph at least 12x%d", p.Title, p.Type, p.GridPos.W, p.GridPos.H, sloPanelHeight)
				case graph:
					fleetOnly(t, p)
				case p.Type != "table" || p.GridPos.W != 24 || p.GridPos.H < sloPanelHeight:
					t.Errorf("%q is a %s %dx%d, want a full-width table at least %d high", p.Title, p.Type, p.GridPos.W, p.GridPos.H, sloPanelHeight)
				}
			}
			for _, f := range sloFormats[file] {
				if !formats[f] {
					t.Errorf("the SLOs row has no %s panel", f)
				}
			}
		})
	}
}

// fleetOnly: a graph of an slo format, which answers per instance then per model's fleet, keeps
// the fleet's series and the time alone (filterFieldsByName on the display names, which start
// with the instance), so that on twenty instances it draws one line per objective or model.
func fleetOnly(t *testing.T, p fleetPanel) {
	t.Helper()
	pattern := fleetOnlyPattern(t, p)
	if pattern == nil {
		return
	}
	for name, keep := range map[string]bool{
		slo.Fleet + " · llama-3-8b · ttft-2s budget left": true,
		slo.Fleet + " · llama-3-8b · Goodput (at least)":  true,
		"time": true, "Time": true,
		"vllm-a:8000 · llama-3-8b · ttft-2s budget left": false,
		"vllm-a:8000 · llama-3-8b · Goodput (at most)":   false,
	} {
		if pattern.MatchString(name) != keep {
			t.Errorf("%q: keeps %q: %t, want %t", p.Title, name, !keep, keep)
		}
	}
}

// fleetOnlyPattern is the include pattern of a panel's filterFieldsByName transformation, or
// nil (an error) when it has none.
func fleetOnlyPattern(t *testing.T, p fleetPanel) *regexp.Regexp {
	t.Helper()
	for _, tr := range p.Transformations {
		if tr.ID != "filterFieldsByName" {
			continue
		}
		var o struct {
			Include struct {
				Pattern string `json:"pattern"`
			} `json:"include"`
		}
		if err := json.Unmarshal(tr.Options, &o); err != nil {
			t.Fatalf("%q: %v", p.Title, err)
		}
		re, err := regexp.Compile(o.Include.Pattern)
		if err != nil || o.Include.Pattern == "" {
			t.Errorf("%q: include pattern %q: %v", p.Title, o.Include.Pattern, err)
			return nil
		}
		return re
	}
	t.Errorf("%q draws every instance's series: no filterFieldsByName", p.Title)
	return nil
}

// Within each dashboard, no two panels share a grid cell.
func TestPanelsDoNotOverlap(t *testing.T) {
	for _, file := range dashboardFiles(t) {
		ps := loadFleetDashboard(t, file).Panels
		for i, a := range ps {
			for _, b := range ps[i+1:] {
				if a.GridPos.X < b.GridPos.X+b.GridPos.W && b.GridPos.X < a.GridPos.X+a.GridPos.W &&
					a.GridPos.Y < b.GridPos.Y+b.GridPos.H && b.GridPos.Y < a.GridPos.Y+a.GridPos.H {
					t.Errorf("%s: %q %+v overlaps %q %+v", file, a.Title, a.GridPos, b.Title, b.GridPos)
				}
			}
		}
	}
}

// The fleet table's instance links open a provisioned dashboard with that instance (and its
// model) selected, every var- a variable of the target.
func TestFleetLinksSelectTheInstance(t *testing.T) {
	byUID := map[string]dashboard{}
	for _, d := range loadDashboards(t) {
		byUID[d.UID] = d
	}
	for _, file := range fleetDashboards {
		d := loadFleetDashboard(t, file)
		var links int
		for _, p := range d.Panels {
			for _, o := range p.Field.Overrides {
				for _, prop := range o.Properties {
					if prop.ID != "links" {
						continue
					}
					var ls []struct{ Title, URL string }
					if err := json.Unmarshal(prop.Value, &ls); err != nil {
						t.Fatal(err)
					}
					for _, l := range ls {
						links++
						u, err := url.Parse(l.URL)
						if err != nil {
							t.Fatalf("%s: link %q: %v", file, l.Title, err)
						}
						target, ok := byUID[strings.TrimPrefix(u.Path, "/d/")]
						if !ok {
							t.Errorf("%s: link %q opens %s, not a provisioned dashboard", file, l.Title, u.Path)
							continue
						}
						if !strings.Contains(l.URL, "var-instance=${__data.fields.instance") {
							t.Errorf("%s: link %q does not select the line's instance", file, l.Title)
						}
						if !strings.Contains(l.URL, "${__url_time_range}") {
							t.Errorf("%s: link %q loses the time range", file, l.Title)
						}
						for key := range u.Query() {
							if name, ok := strings.CutPrefix(key, "var-"); ok {
								if _, ok := target.variable(name); !ok {
									t.Errorf("%s: link %q sets var-%s, which %s does not define", file, l.Title, name, target.file)
								}
							}
						}
					}
				}
			}
		}
		if links == 0 {
			t.Errorf("%s: the fleet table links to no instance", file)
		}
	}
}

// Each annotation query follows the instance and model variables, asks for headline findings
// of one severity, and is drawn in that severity's colour; together they cover every severity.
func TestAnnotationsFollowTheVariablesOneSeverityEach(t *testing.T) {
	for _, file := range fleetDashboards {
		d := loadFleetDashboard(t, file)
		covered := map[diagnosis.Severity]bool{}
		for _, a := range d.Annotations.List {
			if a.BuiltIn == 1 {
				continue
			}
			parsed, err := DecodeQuery(a.Target)
			if err != nil {
				t.Fatalf("%s, %s: %v", file, a.Name, err)
			}
			q, ok := parsed.(plugin.DiagnosisQuery)
			if !ok {
				t.Fatalf("%s, %s: a %s query, want diagnosis", file, a.Name, parsed.QueryType())
			}
			if q.Instance != "$instance" || q.Model != "$model" {
				t.Errorf("%s, %s: instance %q, model %q; want the dashboard's variables", file, a.Name, q.Instance, q.Model)
			}
			if !q.HeadlineOnly {
				t.Errorf("%s, %s: draws secondary findings too", file, a.Name)
			}
			if len(q.Severities) != 1 || frames.SeverityColors[string(q.Severities[0])] != a.IconColor {
				t.Errorf("%s, %s: severities %v in %s", file, a.Name, q.Severities, a.IconColor)
				continue
			}
			covered[q.Severities[0]] = true
		}
		for _, s := range []diagnosis.Severity{diagnosis.Critical, diagnosis.Warning, diagnosis.Info} {
			if !covered[s] {
				t.Errorf("%s: no annotation draws %s findings", file, s)
			}
		}
	}
}

func TestTimeSeriesLegendsAreTablesWithLastAndMaxSorted(t *testing.T) {
	for _, file := range fleetDashboards {
		for _, p := range loadFleetDashboard(t, file).Panels {
			if p.Type != "timeseries" {
				continue
			}
			var o struct {
				Legend struct {
					DisplayMode string   `json:"displayMode"`
					Calcs       []string `json:"calcs"`
					SortBy      string   `json:"sortBy"`
				} `json:"legend"`
			}
			if err := json.Unmarshal(p.Options, &o); err != nil {
				t.Fatal(err)
			}
			l := o.Legend
			if l.DisplayMode != "table" || !slices.Contains(l.Calcs, "lastNotNull") || !slices.Contains(l.Calcs, "max") || l.SortBy == "" {
				t.Errorf("%s, %s: legend %+v", file, p.Title, l)
			}
		}
	}
}

// The panels that show a signal the matrix has a threshold on draw that threshold, at the
// rule's default.
func TestMatrixThresholdsAreDrawn(t *testing.T) {
	rules, err := diagnosis.Rules(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := func(rule, param string) float64 {
		for _, r := range rules {
			for _, p := range r.Params {
				if r.ID == rule && p.Name == param {
					return p.Default
				}
			}
		}
		t.Fatalf("no parameter %s of %s", param, rule)
		return 0
	}
	want := map[string]float64{
		"kv_usage":             def(diagnosis.KVCacheSaturated, "kv_usage"),
		"spec_acceptance_rate": def(diagnosis.SpecDecodeInefficient, "acceptance_rate"),
		"waiting_ratio":        def(diagnosis.QueueWithFreeCache, "waiting_ratio"),
	}
	drawn := map[string]bool{}
	for _, file := range fleetDashboards {
		for _, p := range loadFleetDashboard(t, file).Panels {
			if p.Type != "timeseries" {
				continue
			}
			for i, q := range p.queries(t) {
				sq, _ := q.(plugin.SignalsQuery)
				for _, s := range sq.Signals {
					v, ok := want[s]
					if !ok {
						continue
					}
					fc := p.thresholdsOf(t, refID(t, p.Targets[i]))
					if fc.Custom.ThresholdsStyle.Mode == "off" || fc.Custom.ThresholdsStyle.Mode == "" || !hasStep(fc.Thresholds, v) {
						t.Errorf("%s, %s: %s is not drawn with its threshold %v (%+v)", file, p.Title, s, v, fc)
					}
					drawn[s] = true
				}
			}
		}
	}
	for s := range want {
		if !drawn[s] {
			t.Errorf("no panel shows %s", s)
		}
	}
}

func refID(t *testing.T, raw json.RawMessage) string {
	var h targetHead
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h.RefID
}

// thresholdsOf is the field config of one query's fields: the panel's defaults with the
// overrides matching its refId applied.
func (p fleetPanel) thresholdsOf(t *testing.T, ref string) fieldConfig {
	fc := p.Field.Defaults
	for _, o := range p.Field.Overrides {
		if o.Matcher.ID != "byFrameRefID" || o.Matcher.Options != ref {
			continue
		}
		for _, prop := range o.Properties {
			var err error
			switch prop.ID {
			case "thresholds":
				fc.Thresholds = &thresholds{}
				err = json.Unmarshal(prop.Value, fc.Thresholds)
			case "custom.thresholdsStyle":
				err = json.Unmarshal(prop.Value, &fc.Custom.ThresholdsStyle)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return fc
}

func hasStep(th *thresholds, v float64) bool {
	if th == nil {
		return false
	}
	for _, s := range th.Steps {
		if s.Value != nil && *s.Value == v {
			return true
		}
	}
	return false
}
