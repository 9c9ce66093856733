package stack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// AlertingFile mirrors Grafana's file-provisioned alerting (apiVersion 1): rule groups only.
type AlertingFile struct {
	APIVersion  int          `yaml:"apiVersion"`
	Groups      []AlertGroup `yaml:"groups"`
	DeleteRules []struct {
		OrgID int    `yaml:"orgId"`
		UID   string `yaml:"uid"`
	} `yaml:"deleteRules"`
}

// AlertGroup is one evaluation group of rules.
type AlertGroup struct {
	OrgID    int         `yaml:"orgId"`
	Name     string      `yaml:"name"`
	Folder   string      `yaml:"folder"`
	Interval string      `yaml:"interval"`
	Rules    []AlertRule `yaml:"rules"`
}

// AlertRule mirrors AlertRuleV1 of Grafana's provisioning (pkg/services/provisioning/alerting).
type AlertRule struct {
	UID                         string            `yaml:"uid"`
	Title                       string            `yaml:"title"`
	Condition                   string            `yaml:"condition"`
	Data                        []AlertQuery      `yaml:"data"`
	DashboardUID                string            `yaml:"dashboardUid"`
	PanelID                     int               `yaml:"panelId"`
	NoDataState                 string            `yaml:"noDataState"`
	ExecErrState                string            `yaml:"execErrState"`
	For                         string            `yaml:"for"`
	KeepFiringFor               string            `yaml:"keepFiringFor"`
	MissingSeriesEvalsToResolve int               `yaml:"missing_series_evals_to_resolve"`
	Annotations                 map[string]string `yaml:"annotations"`
	Labels                      map[string]string `yaml:"labels"`
	IsPaused                    bool              `yaml:"isPaused"`
}

// AlertQuery is one query or expression of a rule: its model is what the data source gets.
type AlertQuery struct {
	RefID             string `yaml:"refId"`
	QueryType         string `yaml:"queryType"`
	RelativeTimeRange struct {
		From int `yaml:"from"`
		To   int `yaml:"to"`
	} `yaml:"relativeTimeRange"`
	DatasourceUID string         `yaml:"datasourceUid"`
	Model         map[string]any `yaml:"model"`
}

// LoadAlertRules reads a file of provisioned alert rules strictly (a key Grafana's format does
// not have is an error) and returns every group's rules.
func LoadAlertRules(file string) ([]AlertRule, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f AlertingFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	var out []AlertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}
