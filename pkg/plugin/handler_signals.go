package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// defaultSignals answer a signals query that names none: the seed's first look.
var defaultSignals = []string{string(series.TTFTP50), string(series.TTFTP99), string(series.KVUsage)}

func handleSignals(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	names := query.Signals
	if len(names) == 0 {
		names = defaultSignals
	}
	wanted, err := parseSignals(names)
	if err != nil {
		return badQuery(err)
	}
	res, err := d.prom.Fetch(ctx, signals.Request{
		Signals:  wanted,
		Start:    q.TimeRange.From,
		End:      q.TimeRange.To,
		Step:     d.step(q),
		Instance: query.Instance,
		Model:    query.Model,
	})
	if err != nil {
		return errorResponse(err)
	}
	return backend.DataResponse{Frames: frames.Signals(res.Set, wanted, signalInfo, strings.Join(res.Queries, "\n"), res.Notices)}
}

func parseSignals(names []string) ([]series.Signal, error) {
	out := make([]series.Signal, 0, len(names))
	for _, n := range names {
		if _, ok := signals.Lookup(series.Signal(n)); !ok {
			return nil, fmt.Errorf("unknown signal %q: known signals are %s", n, strings.Join(signals.Names(), ", "))
		}
		out = append(out, series.Signal(n))
	}
	return out, nil
}

func signalInfo(s series.Signal) frames.SignalInfo {
	d, _ := signals.Lookup(s)
	return frames.SignalInfo{Label: d.Label, Unit: d.Unit}
}
