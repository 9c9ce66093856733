package stack

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plugin"
)

// expression is the model of a server-side expression (datasource __expr__) as this stack uses
// them: reduce and threshold.
type expression struct {
	RefID      string        `json:"refId"`
	Datasource DatasourceRef `json:"datasource"`
	Type       string        `json:"type"`
	Expression string        `json:"expression"`
	Reducer    string        `json:"reducer"`
	Settings   struct {
		Mode string `json:"mode"`
	} `json:"settings"`
	Conditions []struct {
		Evaluator struct {
			Type   string    `json:"type"`
			Params []float64 `json:"params"`
		} `json:"evaluator"`
	} `json:"conditions"`
}

const exprDatasource = "__expr__"

// The provisioned alert rule files: the diagnosis matrix's and the objectives'.
const (
	matrixRulesFile = "vllm-rules.yaml"
	sloRulesFile    = "vllm-slo-rules.yaml"
)

// loadAlertRules reads the diagnosis matrix's alert rules.
func loadAlertRules(t *testing.T) []AlertRule { return loadAlertFile(t, matrixRulesFile) }

// loadEveryAlertRule reads the rules of every file Grafana provisions from
// provisioning/alerting, so that a new file is checked by the tests that hold for any rule.
func loadEveryAlertRule(t *testing.T) []AlertRule {
	t.Helper()
	files, err := filepath.Glob(path("provisioning", "alerting", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no alert rule files: %v", err)
	}
	var out []AlertRule
	for _, f := range files {
		out = append(out, loadAlertFile(t, filepath.Base(f))...)
	}
	return out
}

func loadAlertFile(t *testing.T, name string) []AlertRule {
	t.Helper()
	var f AlertingFile
	readYAMLStrict(t, path("provisioning", "alerting", name), &f)
	if f.APIVersion != 1 || len(f.Groups) == 0 {
		t.Fatalf("apiVersion %d with %d groups", f.APIVersion, len(f.Groups))
	}
	var out []AlertRule
	for _, g := range f.Groups {
		if g.Name == "" || g.Folder == "" || g.Interval == "" || g.OrgID < 1 {
			t.Errorf("group %+v: name, folder, interval and orgId are required", g.Name)
		}
		out = append(out, g.Rules...)
	}
	return out
}

func decodeModel(t *testing.T, m map[string]any, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// ruleOf returns the diagnosis rule an alert rule queries, checking that its first query is
// the plugin's diagnosis alert query.
func ruleOf(t *testing.T, r AlertRule) string {
	t.Helper()
	if len(r.Data) == 0 {
		t.Fatalf("%s: no data", r.Title)
	}
	a := r.Data[0]
	ds, ok := byUID(loadDatasources(t), a.DatasourceUID)
	if !ok || ds.Type != PluginID {
		t.Errorf("%s: data[0] queries %q, not a provisioned %s data source", r.Title, a.DatasourceUID, PluginID)
	}
	if a.RelativeTimeRange.From <= a.RelativeTimeRange.To {
		t.Errorf("%s: relativeTimeRange %+v evaluates no time", r.Title, a.RelativeTimeRange)
	}
	parsed, err := DecodeRequestQuery(decodeModel(t, a.Model, nil))
	if err != nil {
		t.Fatalf("%s: data[0] is not the plugin's query model: %v", r.Title, err)
	}
	q, ok := parsed.(plugin.DiagnosisQuery)
	if !ok || q.Format != plugin.FormatAlert || len(q.Rules) != 1 {
		t.Fatalf("%s: data[0] is %#v; want a diagnosis alert query of one rule", r.Title, parsed)
	}
	if a.QueryType != "" && a.QueryType != string(q.QueryType()) {
		t.Errorf("%s: data[0].queryType %q differs from the model's %q", r.Title, a.QueryType, q.QueryType())
	}
	return q.Rules[0]
}

func TestAlertRulesCoverEveryRuleOfTheMatrixOnce(t *testing.T) {
	var got []string
	for _, r := range loadAlertRules(t) {
		got = append(got, ruleOf(t, r))
	}
	want := diagnosis.IDs()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("alert rules query %v; the matrix has %v", got, want)
	}
}

// TestEveryAlertQueryFollowsThePluginsSchema: each query of a rule that asks the plugin, the
// recommendation queries included, is one the plugin's query schema accepts.
func TestEveryAlertQueryFollowsThePluginsSchema(t *testing.T) {
	var queries int
	for _, r := range loadEveryAlertRule(t) {
		for _, d := range r.Data {
			if d.DatasourceUID == exprDatasource {
				continue
			}
			queries++
			if _, err := DecodeRequestQuery(decodeModel(t, d.Model, nil)); err != nil {
				t.Errorf("%s, %s: %v", r.Title, d.RefID, err)
			}
		}
	}
	if queries == 0 {
		t.Fatal("no alert rule queries the plugin")
	}
}

func TestAlertRulesFireWhenTheLastValueIsAboveZero(t *testing.T) {
	for _, r := range loadEveryAlertRule(t) {
		t.Run(r.Title, func(t *testing.T) {
			refs := map[string]AlertQuery{}
			for _, d := range r.Data {
				if _, dup := refs[d.RefID]; dup {
					t.Errorf("refId %s repeated", d.RefID)
				}
				refs[d.RefID] = d
			}
			cond, ok := refs[r.Condition]
			if !ok {
				t.Fatalf("condition %q names no query of the rule", r.Condition)
			}
			var threshold expression
			decodeModel(t, cond.Model, &threshold)
			if cond.DatasourceUID != exprDatasource || threshold.Type != "threshold" || len(threshold.Conditions) != 1 ||
				threshold.Conditions[0].Evaluator.Type != "gt" || !slices.Equal(threshold.Conditions[0].Evaluator.Params, []float64{0}) {
				t.Fatalf("condition %s is not a threshold > 0: %+v", r.Condition, threshold)
			}
			reduceQ, ok := refs[threshold.Expression]
			if !ok {
				t.Fatalf("threshold reads %q, which is no query of the rule", threshold.Expression)
			}
			var reduce expression
			decodeModel(t, reduceQ.Model, &reduce)
			if reduceQ.DatasourceUID != exprDatasource || reduce.Type != "reduce" || reduce.Reducer != "last" {
				t.Fatalf("threshold reads %s, not a reduce (last): %+v", threshold.Expression, reduce)
			}
			if reduce.Expression != r.Data[0].RefID {
				t.Errorf("reduce reads %q, not the rule's first query %s", reduce.Expression, r.Data[0].RefID)
			}
			for _, e := range []expression{threshold, reduce} {
				if e.Datasource.UID != exprDatasource || e.RefID == "" {
					t.Errorf("expression %s: datasource %+v", e.RefID, e.Datasource)
				}
			}
		})
	}
}

var vllmFlag = regexp.MustCompile(`--[a-z][a-z0-9-]+`)

func TestAlertRulesCarryTheRulesForSeverityAndAction(t *testing.T) {
	catalog, err := diagnosis.Catalog(nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]diagnosis.CatalogEntry{}
	for _, c := range catalog {
		byID[c.ID] = c
	}
	uids := map[string]bool{}
	for _, r := range loadAlertRules(t) {
		t.Run(r.Title, func(t *testing.T) {
			id := ruleOf(t, r)
			c, ok := byID[id]
			if !ok {
				t.Fatalf("rule %q is not in the matrix", id)
			}
			if r.UID == "" || len(r.UID) > 40 || uids[r.UID] {
				t.Errorf("uid %q: Grafana needs a unique uid of at most 40 characters", r.UID)
			}
			uids[r.UID] = true
			if r.For != c.For {
				t.Errorf("for %q; the rule %s holds for %s", r.For, c.ID, c.For)
			}
			if r.Labels["severity"] != string(c.Severity) {
				t.Errorf("severity %q; the rule %s is %s", r.Labels["severity"], c.ID, c.Severity)
			}
			summary := r.Annotations["summary"]
			for _, flag := range vllmFlag.FindAllString(c.Action, -1) {
				if !strings.Contains(summary, flag) {
					t.Errorf("summary %q does not name %s, from the action %q", summary, flag, c.Action)
				}
			}
			if r.Annotations["description"] == "" {
				t.Error("no description")
			}
			// Grafana expands $VAR in provisioned titles, labels and annotations.
			for k, v := range r.Annotations {
				if strings.Contains(v, "$") {
					t.Errorf("annotation %s contains $, which Grafana's provisioning would expand: %q", k, v)
				}
			}
			if strings.Contains(r.Title, "$") {
				t.Errorf("title %q contains $", r.Title)
			}
		})
	}
}

func TestAlertRulesLinkToAnExistingPanel(t *testing.T) {
	panels := map[string][]int{}
	for _, d := range loadDashboards(t) {
		for _, p := range allPanels(d.Panels) {
			panels[d.UID] = append(panels[d.UID], p.ID)
		}
	}
	for _, r := range loadEveryAlertRule(t) {
		if r.DashboardUID == "" {
			continue
		}
		if !slices.Contains(panels[r.DashboardUID], r.PanelID) {
			t.Errorf("%s: links to panel %d of dashboard %q, which does not exist", r.Title, r.PanelID, r.DashboardUID)
		}
	}
}

// Two alerts keep the names and values README's Alerting gives them (SpecDecodeInefficient,
// KVCacheSaturated); the stack provisions them so.
func TestSeedAlertsAreProvisionedAsTheSeedWritesThem(t *testing.T) {
	seed := []struct {
		title, rule, forDuration, severity string
	}{
		{"SpecDecodeInefficient", diagnosis.SpecDecodeInefficient, "5m", "warning"},
		{"KVCacheSaturated", diagnosis.KVCacheSaturated, "3m", "critical"},
	}
	rules := loadAlertRules(t)
	for _, s := range seed {
		i := slices.IndexFunc(rules, func(r AlertRule) bool { return r.Title == s.title })
		if i < 0 {
			t.Errorf("no alert rule %s", s.title)
			continue
		}
		r := rules[i]
		if got := ruleOf(t, r); got != s.rule || r.For != s.forDuration || r.Labels["severity"] != s.severity {
			t.Errorf("%s: rule %s for %s severity %s; the seed writes %s for %s severity %s",
				s.title, got, r.For, r.Labels["severity"], s.rule, s.forDuration, s.severity)
		}
	}
}
