package plugin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
	topK, err := parseTopK(query.TopK)
	if err != nil {
		return badQuery(err)
	}
	res, err := d.prom.Fetch(ctx, p.Metrics)
	if err != nil {
		return errorResponse(err)
	}
	return backend.DataResponse{Frames: frames.Signals(res.Set, p.Signals, signalInfo, p.Executed(res.Plan), res.Notices, topK)}
}

// parseTopK reads a signals query's topK: empty is 0, every series.
func parseTopK(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return 0, fmt.Errorf("topK %q is not a whole number of instances (0 or more): set it to 5, say, or leave it empty for every series", s)
	}
	return k, nil
}

func signalInfo(s series.Signal) frames.SignalInfo {
	d, _ := signals.Lookup(s)
	return frames.SignalInfo{Label: d.Label, Unit: d.Unit, LowerIsWorse: d.LowerIsWorse}
}
