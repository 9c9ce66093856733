package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/plan"
)

// planSettings are the data source settings that query plans depend on.
func (d *Datasource) planSettings() plan.Settings {
	return plan.Settings{Metrics: d.prom.Config(), Thresholds: d.settings.Thresholds, Objectives: d.settings.SLOs}
}

// scopeOf is a query's range, Grafana's interval for it, and its filters, as plans read them.
func scopeOf(q backend.DataQuery, sc Scope) plan.Scope {
	return plan.Scope{From: q.TimeRange.From, To: q.TimeRange.To, Interval: q.Interval, Instance: sc.Instance, Model: sc.Model}
}
