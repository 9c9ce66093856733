package signals

import (
	"context"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Instances lists the vLLM instances Prometheus knows, optionally only those serving models
// that match a filter. Every vLLM generation exports num_requests_running, so it finds all.
func (c *Client) Instances(ctx context.Context, model string, start, end time.Time) ([]string, error) {
	return c.labelValues(ctx, c.labels.Instance, Filter{Model: model}, start, end)
}

// Models lists the served model names, optionally only on instances that match a filter.
func (c *Client) Models(ctx context.Context, instance string, start, end time.Time) ([]string, error) {
	return c.labelValues(ctx, c.labels.Model, Filter{Instance: instance}, start, end)
}

func (c *Client) labelValues(ctx context.Context, label string, f Filter, start, end time.Time) ([]string, error) {
	f.Matchers = c.base
	b, err := newBuilder(c.labels, f, 0)
	if err != nil {
		return nil, err
	}
	vals, _, _, err := c.api.LabelValues(ctx, label, []string{b.sel(vllm.RequestsRunning)}, start, end)
	if err != nil {
		return nil, downstream("listing "+label+" values", err)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		out = append(out, string(v))
	}
	sort.Strings(out)
	return out, nil
}
