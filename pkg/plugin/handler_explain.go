package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// ExplainAnnotation is the explain query's format that answers only the request's interval,
// for an annotation query.
const ExplainAnnotation ExplainFormat = "annotation"

// explainFormat is one form of an explain query's answer besides the explanation (no format).
type explainFormat struct{ EnumValue }

// explainFormats are the formats of an explain query; without one it answers the explanation.
var explainFormats = []explainFormat{
	{EnumValue{Value: string(ExplainAnnotation), Doc: "the request's interval alone, as a plain frame for annotation queries"}},
}

// handleExplain answers an explain query: one request by trace id, its stages, the findings
// active while it ran, and the signals of its instance around it. The trace comes first (it
// says which instance and when); its peers and the metrics are then fetched in parallel.
func handleExplain(ctx context.Context, d *Datasource, q backend.DataQuery, query ExplainQuery) backend.DataResponse {
	if _, ok := lookup(explainFormats, query.Format); query.Format != "" && !ok {
		return badQuery(fmt.Errorf("format %q is not one an explain query answers: leave it empty for the explanation, or use %s", query.Format, valueList(explainFormats)))
	}
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	if strings.TrimSpace(query.TraceID) == "" {
		return backend.DataResponse{Frames: frames.NoRequest()}
	}
	req, err := d.traces.Get(ctx, query.TraceID)
	if errors.Is(err, traces.ErrNotFound) {
		return errorResponse(fmt.Errorf("%w: no trace %s in %s at %s: it may have expired or been sampled out", traces.ErrNotFound,
			strings.TrimSpace(query.TraceID), d.settings.tracesName(), redacted(d.settings.TracesURL)))
	}
	if err != nil {
		return errorResponse(err)
	}

	// The metrics and the peers are independent: fetched at once. Neither fails the query:
	// each error is a notice, so the group's goroutines return none.
	p := plan.NewExplain(d.planSettings(), scopeOf(q, Scope{}), req)
	var (
		around   []traces.Request
		peersRan traces.SearchInfo
		skipped  error
		diag     *Diagnosis
		g        errgroup.Group
	)
	merr := p.MetricsErr
	if merr == nil {
		g.Go(func() error {
			diag, merr = d.diagnosePlan(ctx, p.Metrics)
			return nil
		})
	}
	g.Go(func() error {
		around, peersRan, skipped = peers(ctx, d, p)
		return nil
	})
	_ = g.Wait()
	in := correlate.Input{Requests: around, From: req.Start, To: req.End}
	var notices []string
	if skipped != nil {
		notices = append(notices, "The other requests of this instance could not be read, so this one is not compared with its window (no anomaly reasons): "+skipped.Error())
	}
	if merr != nil {
		notices = append(notices, "The metrics could not be read, so the request is explained without its metric state and findings: "+merr.Error())
	} else {
		in.Set, in.Findings = diag.Set, diag.Result.Findings
	}
	res := correlate.Join(in, correlate.Options{})
	notices = append(notices, res.Notices...)
	row := slices.IndexFunc(res.Rows, func(r correlate.Row) bool { return r.TraceID == req.TraceID })
	e := correlate.Explain(res.Rows[row])
	if query.Format == ExplainAnnotation {
		// The drill-down draws the request's interval on its graphs from this frame alone.
		return backend.DataResponse{Frames: data.Frames{frames.RequestInterval(e)}}
	}
	var shown *frames.Around
	if diag != nil {
		from, to := p.Shown()
		shown = &frames.Around{Set: diag.Set, Signals: plan.ExplainShown(), From: from, To: to,
			Executed: p.Executed(diag.Executed, peersRan.Query)}
	}
	if d.settings.SLOsErr != nil {
		notices = append(notices, "The objectives of the data source settings could not be read, so the request is not judged against them: "+d.settings.SLOsErr.Error())
	}
	judged := slo.Judge(d.settings.SLOs, slo.Request{Model: e.Row.Model, TTFT: e.Row.TTFT, TPOT: e.Row.DecodePerToken,
		E2E: e.Row.E2E, FinishReasons: e.Row.FinishReason})
	return backend.DataResponse{Frames: frames.Explanation(e, judged, signalInfo, notices, shown)}
}

// peers returns the request with the others of its instance around it (the plan's Peers
// search), so that it is compared with its window as the requests query compares it, and the
// search as sent. When they cannot be had, the request is explained alone, without anomaly
// reasons, and the error says why.
func peers(ctx context.Context, d *Datasource, p plan.Explain) ([]traces.Request, traces.SearchInfo, error) {
	req := p.Request
	around, info, err := d.traces.Search(ctx, p.Peers)
	if err != nil {
		return []traces.Request{req}, info, err
	}
	out := slices.DeleteFunc(around, func(r traces.Request) bool { return r.TraceID == req.TraceID })
	return append(out, req), info, nil
}
