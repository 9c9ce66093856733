package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Exposition is how an instance's metrics reach Prometheus when that differs from what current
// vLLM prints and Prometheus keeps by default: another bucket layout, a scrape job that drops
// some buckets, or an older server that lacks some families.
type Exposition struct {
	// Buckets replaces vLLM's finite bucket bounds of a histogram family (by family name, as in
	// package vllm): a release or build with another layout.
	Buckets map[string][]float64 `json:"buckets,omitempty"`
	// KeepBuckets keeps only these finite bounds of a histogram family, and +Inf, as a
	// metric_relabel_configs rule that drops the other le values does.
	KeepBuckets map[string][]float64 `json:"keepBuckets,omitempty"`
	// Omit lists metric families (scraped names) the server does not export, such as a vLLM V0
	// build that has the spec-decode acceptance gauge but not the token counters.
	Omit []string `json:"omit,omitempty"`
}

func (x Exposition) validate(where string) []error {
	var errs []error
	for _, m := range []map[string][]float64{x.Buckets, x.KeepBuckets} {
		for name, bounds := range m {
			if d, ok := vllm.Lookup(name); !ok || d.Type != vllm.Histogram {
				errs = append(errs, fmt.Errorf("%s: %s is not a vLLM histogram", where, name))
			}
			if len(bounds) == 0 || !slices.IsSorted(bounds) || slices.ContainsFunc(bounds, func(b float64) bool { return math.IsInf(b, 0) || math.IsNaN(b) }) {
				errs = append(errs, fmt.Errorf("%s: %s: want finite bounds in increasing order, got %v", where, name, bounds))
			}
		}
	}
	return errs
}

// gatherer is an instance's registry as its scrape job sees it.
type gatherer struct {
	reg *prometheus.Registry
	exp Exposition
}

func (g gatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.reg.Gather()
	if err != nil || (len(g.exp.KeepBuckets) == 0 && len(g.exp.Omit) == 0) {
		return mfs, err
	}
	out := mfs[:0]
	for _, mf := range mfs {
		name := mf.GetName()
		if slices.Contains(g.exp.Omit, name) {
			continue
		}
		if keep, ok := g.exp.KeepBuckets[name]; ok {
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				kept := h.Bucket[:0]
				for _, b := range h.GetBucket() {
					if slices.Contains(keep, b.GetUpperBound()) {
						kept = append(kept, b)
					}
				}
				h.Bucket = kept
			}
		}
		out = append(out, mf)
	}
	return out, nil
}
