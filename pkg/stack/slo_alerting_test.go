package stack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// sloRule is what an objective's alert rule asks: the burn series of one objective and severity.
func sloRule(t *testing.T, r AlertRule) plugin.SLOQuery {
	t.Helper()
	if len(r.Data) == 0 {
		t.Fatalf("%s: no data", r.Title)
	}
	a := r.Data[0]
	if ds, ok := byUID(loadDatasources(t), a.DatasourceUID); !ok || ds.Type != PluginID {
		t.Errorf("%s: data[0] queries %q, not a provisioned %s data source", r.Title, a.DatasourceUID, PluginID)
	}
	parsed, err := DecodeRequestQuery(decodeModel(t, a.Model, nil))
	if err != nil {
		t.Fatalf("%s: data[0] is not the plugin's query model: %v", r.Title, err)
	}
	q, ok := parsed.(plugin.SLOQuery)
	if !ok || q.Format != plugin.FormatSLOBurn || len(q.SLOs) != 1 || q.Severity == "" {
		t.Fatalf("%s: data[0] is %#v; want an slo burn query of one objective and one severity", r.Title, parsed)
	}
	if a.QueryType != string(q.QueryType()) {
		t.Errorf("%s: data[0].queryType %q differs from the model's %q", r.Title, a.QueryType, q.QueryType())
	}
	return q
}

// TestSLOAlertRulesPageAndTicketEveryObjective: each objective the data source provisions has
// one page rule and one ticket rule, labelled with their severity, whose summary names the
// finding that spends the budget.
func TestSLOAlertRulesPageAndTicketEveryObjective(t *testing.T) {
	raw, err := ProvisionedSLOs("vllm")
	if err != nil {
		t.Fatal(err)
	}
	objectives, err := slo.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, o := range objectives {
		for _, sev := range slo.BurnSeverities {
			want = append(want, fmt.Sprintf("%s %s", o.Name, sev))
		}
	}
	for _, r := range loadAlertFile(t, sloRulesFile) {
		t.Run(r.Title, func(t *testing.T) {
			q := sloRule(t, r)
			got = append(got, fmt.Sprintf("%s %s", q.SLOs[0], q.Severity))
			if r.Labels["severity"] != string(q.Severity) {
				t.Errorf("label severity %q; the series it fires on are %s", r.Labels["severity"], q.Severity)
			}
			if !strings.Contains(r.Annotations["summary"], ".Labels.top_rule") || r.Annotations["description"] == "" {
				t.Errorf("summary %q does not name the finding (top_rule), or no description", r.Annotations["summary"])
			}
			for k, v := range r.Annotations {
				if strings.Contains(v, "$") {
					t.Errorf("annotation %s contains $, which Grafana's provisioning would expand: %q", k, v)
				}
			}
		})
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("rules for %v; the provisioned objectives need %v", got, want)
	}
}

func TestAlertRuleUIDsAreUniqueAcrossFiles(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range loadEveryAlertRule(t) {
		if r.UID == "" || len(r.UID) > 40 || seen[r.UID] {
			t.Errorf("%s: uid %q: Grafana needs a unique uid of at most 40 characters", r.Title, r.UID)
		}
		seen[r.UID] = true
	}
}
