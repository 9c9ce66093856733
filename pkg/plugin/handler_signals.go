package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

func handleSignals(ctx context.Context, d *Datasource, q backend.DataQuery, query SignalsQuery) backend.DataResponse {
	p, err := plan.NewSignals(d.planSettings(), scopeOf(q, query.Scope), query.Signals)
	if err != nil {
		return badQuery(err)
	}
	res, err := d.prom.Fetch(ctx, p.Metrics)
	if err != nil {
		return errorResponse(err)
	}
	return backend.DataResponse{Frames: frames.Signals(res.Set, p.Signals, signalInfo, p.Executed(res.Plan), res.Notices)}
}

func signalInfo(s series.Signal) frames.SignalInfo {
	d, _ := signals.Lookup(s)
	return frames.SignalInfo{Label: d.Label, Unit: d.Unit}
}
