package embedprom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"
)

// ScrapeJob is the job label of the series Scrape stores, vLLM's usual scrape job.
const ScrapeJob = "vllm"

// Target is one scrape target as the scrape manager last saw it.
type Target struct {
	// URL is the scraped URL; Instance its instance label, host:port.
	URL, Instance string
	// Scraped is false until the first scrape ends, whatever its outcome.
	Scraped bool
	// Err is the last scrape's error, nil when it succeeded.
	Err error
}

// Scrape starts Prometheus's scrape manager on the targets, one job with the given interval,
// storing into the TSDB; every target's instance label is its host:port. Close stops it.
func (s *Server) Scrape(targets []*url.URL, interval time.Duration) error {
	if s.scraper.Load() != nil {
		return errors.New("embedprom: Scrape called twice")
	}
	if len(targets) == 0 {
		return errors.New("no target to scrape")
	}
	timeout := min(interval, 10*time.Second)
	cfg, err := config.Load(fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n- job_name: %s\n",
		model.Duration(interval), model.Duration(timeout), ScrapeJob), s.logger)
	if err != nil {
		return fmt.Errorf("scrape configuration: %w", err)
	}
	m, err := scrape.NewManager(&scrape.Options{}, s.logger, nil, nil, s.db, s.reg)
	if err != nil {
		return err
	}
	if err := m.ApplyConfig(cfg); err != nil {
		return err
	}
	groups := make([]*targetgroup.Group, len(targets))
	for i, u := range targets {
		groups[i] = &targetgroup.Group{Source: u.String(), Targets: []model.LabelSet{{
			model.AddressLabel:     model.LabelValue(u.Host),
			model.SchemeLabel:      model.LabelValue(u.Scheme),
			model.MetricsPathLabel: model.LabelValue(u.Path),
		}}}
	}
	tsets := make(chan map[string][]*targetgroup.Group, 1)
	tsets <- map[string][]*targetgroup.Group{ScrapeJob: groups}
	s.tsets = tsets
	s.scraper.Store(m)
	go func() { _ = m.Run(tsets) }()
	return nil
}

// Targets are the scrape targets' states, in no particular order; none before the scrape
// manager has built its pool.
func (s *Server) Targets() []Target {
	m := s.scraper.Load()
	if m == nil {
		return nil
	}
	var out []Target
	b := labels.NewBuilder(labels.EmptyLabels())
	for _, ts := range m.TargetsActive() {
		for _, t := range ts {
			out = append(out, Target{
				URL:      t.URL().String(),
				Instance: t.Labels(b).Get(model.InstanceLabel),
				Scraped:  !t.LastScrape().IsZero(),
				Err:      t.LastError(),
			})
		}
	}
	return out
}

// Has reports whether the TSDB holds a series matching every matcher.
func (s *Server) Has(ctx context.Context, ms ...*labels.Matcher) (bool, error) {
	q, err := s.db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return false, err
	}
	defer q.Close()
	set := q.Select(ctx, false, nil, ms...)
	return set.Next(), set.Err()
}
