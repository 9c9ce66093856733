package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

func handleVerdict(ctx context.Context, d *Datasource, q backend.DataQuery, query VerdictQuery) backend.DataResponse {
	p, err := plan.NewVerdict(d.planSettings(), scopeOf(q, query.Scope), query.BaselineFrom, query.BaselineTo, strs(query.Optimisations), time.Now())
	if err == nil {
		p, err = p.WithRule(query.Rule)
	}
	if err != nil {
		return badQuery(err)
	}
	fetched, err := d.prom.FetchAll(ctx, p.Metrics[:]...)
	if err != nil {
		return errorResponse(err)
	}
	results := [2]*signals.Result{fetched[0], fetched[1]}
	for i, res := range results {
		if res.Window != p.Metrics[i].Step {
			return errorResponse(fmt.Errorf("%w: the rate window %s differs from the step %s, so the windows would not tile", errInternal, res.Window, p.Metrics[i].Step))
		}
	}
	in := verdict.Input{
		Baseline: results[0].Set, Current: results[1].Set,
		BaselineWindow: p.Baseline, CurrentWindow: p.Current,
		Declared: p.Declared, Params: verdict.DefaultParams(),
	}
	out := frames.Verdict(verdict.Evaluate(in), p.Executed(results[0].Plan, results[1].Plan), verdict.Notices(results[0].Notices, results[1].Notices))
	if p.Rule != "" {
		out = append(out, frames.Promise(p.Rule, verdict.CheckPromises(in, p.Promise)))
	}
	return backend.DataResponse{Frames: out}
}
