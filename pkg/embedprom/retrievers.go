package embedprom

import (
	"errors"
	"net/url"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/tsdb"
)

// noTargets answers the API's target endpoints for a TSDB that nothing scrapes.
type noTargets struct{}

func (noTargets) ScrapePools() []string                       { return nil }
func (noTargets) TargetsActive() map[string][]*scrape.Target  { return nil }
func (noTargets) TargetsDropped() map[string][]*scrape.Target { return nil }
func (noTargets) TargetsDroppedCounts() map[string]int        { return nil }
func (noTargets) ScrapePoolConfig(string) (*config.ScrapeConfig, error) {
	return nil, errors.New("no scrape pools: this Prometheus only serves stored data")
}

// noAlertmanagers answers the API's alertmanager endpoint: the embedded server sends no alerts.
type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL        { return nil }
func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return nil }

// noRules answers the API's rules endpoints: the embedded server evaluates no rules.
type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return nil }
func (noRules) AlertingRules() []*rules.AlertingRule { return nil }

// adminStats is the TSDB as the API's status endpoints read it.
type adminStats struct{ *tsdb.DB }

func (a adminStats) BlockMetas() ([]tsdb.BlockMeta, error) { return a.DB.BlockMetas(), nil }

func (a adminStats) Stats(statsByLabelName string, limit int) (*tsdb.Stats, error) {
	return a.Head().Stats(statsByLabelName, limit), nil
}

// WALReplayStatus: Open returns once the write-ahead log is replayed.
func (a adminStats) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return tsdb.WALReplayStatus{}, nil
}
