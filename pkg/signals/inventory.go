package signals

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// LabelQuery is a label-values lookup, the plan of a template variable or an editor's picker:
// the values of Label on the series Selector selects, from Start to End.
type LabelQuery struct {
	Label, Selector string
	Start, End      time.Time
}

// NewLabelQuery writes the lookup of a label's values on the vLLM series that match a filter
// (the data source's matchers are added). Every vLLM generation exports num_requests_running,
// so its series find every instance and model.
func NewLabelQuery(cfg Config, label string, f Filter, start, end time.Time) (LabelQuery, error) {
	f.Matchers = cfg.Matchers
	b, err := newBuilder(cfg.Labels, f, 0)
	if err != nil {
		return LabelQuery{}, err
	}
	return LabelQuery{Label: label, Selector: b.sel(vllm.RequestsRunning), Start: start, End: end}, nil
}

// String is the lookup as a frame's or a log's executed query.
func (q LabelQuery) String() string {
	return fmt.Sprintf("Prometheus label values of %s on %s, %s to %s", q.Label, q.Selector, series.Stamp(q.Start), series.Stamp(q.End))
}

// Instances lists the vLLM instances Prometheus knows, optionally only those serving models
// that match a filter.
func (c *Client) Instances(ctx context.Context, model string, start, end time.Time) ([]string, error) {
	q, err := NewLabelQuery(c.Config(), c.labels.Instance, Filter{Model: model}, start, end)
	if err != nil {
		return nil, err
	}
	return c.LabelValues(ctx, q)
}

// Models lists the served model names, optionally only on instances that match a filter.
func (c *Client) Models(ctx context.Context, instance string, start, end time.Time) ([]string, error) {
	q, err := NewLabelQuery(c.Config(), c.labels.Model, Filter{Instance: instance}, start, end)
	if err != nil {
		return nil, err
	}
	return c.LabelValues(ctx, q)
}

// LabelValues runs a label-values lookup; the values come sorted.
func (c *Client) LabelValues(ctx context.Context, q LabelQuery) ([]string, error) {
	vals, _, _, err := c.api.LabelValues(ctx, q.Label, []string{q.Selector}, q.Start, q.End)
	if err != nil {
		return nil, downstream("listing "+q.Label+" values", err)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		out = append(out, string(v))
	}
	sort.Strings(out)
	return out, nil
}
