package plan

import (
	"slices"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// Settings are the data source settings that plans depend on.
type Settings struct {
	// Metrics are the Prometheus labels, scrape interval and extra matchers.
	Metrics    signals.Config
	Thresholds diagnosis.Thresholds
	// Objectives are the data source's service-level objectives (none when it has none, or
	// when they are bad): a diagnosis reads their events too, to count each finding's misses.
	Objectives []slo.Objective
}

// Scope is a query's time range, the interval Grafana suggests for it, and its filters (exact
// values or regular expressions; empty for all).
type Scope struct {
	From, To        time.Time
	Interval        time.Duration
	Instance, Model string
}

// Step chooses the range-query step, in whole seconds and at least one: Grafana's interval
// (rounded to the second), but never finer than the scrape interval (no new data in between)
// nor so fine that a series passes Prometheus's 11,000 points (that bound is rounded up).
func Step(s Settings, sc Scope) time.Duration {
	step := max(sc.Interval, s.Metrics.Scrape).Round(time.Second)
	if min := ceilSecond(sc.To.Sub(sc.From) / signals.MaxPoints); step < min {
		step = min
	}
	return max(step, time.Second)
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// appendMissing appends the signals of extra that list does not hold yet, in their order.
func appendMissing(list, extra []series.Signal) []series.Signal {
	for _, s := range extra {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}
