package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// explainAnnotation is the explain query's format that answers only the request's interval,
// for an annotation query.
const explainAnnotation = "annotation"

// explainPad is how much of the metrics before and after a request its explanation shows.
const explainPad = 10 * time.Minute

// handleExplain answers an explain query: one request by trace id, its stages, the findings
// active while it ran, and the signals of its instance around it. The trace comes first (it
// says which instance and when); its peers and the metrics are then fetched in parallel.
func handleExplain(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	if strings.TrimSpace(query.TraceID) == "" {
		// The drill-down opened on its own (not from a request link) has no trace id yet: an
		// instruction, not an error badge on its panels.
		f := data.NewFrame("explanation")
		f.Meta = &data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityInfo,
			Text: "No request selected: click a trace id in a requests table (or set the Trace ID variable) to explain that request. An explain query reads explain <traceId>."}}}
		return backend.DataResponse{Frames: data.Frames{f}}
	}
	req, err := d.traces.Get(ctx, query.TraceID)
	if errors.Is(err, traces.ErrNotFound) {
		return errorResponse(fmt.Errorf("%w: no trace %s in %s at %s: it may have expired or been sampled out", traces.ErrNotFound,
			strings.TrimSpace(query.TraceID), backendName(d.settings.TracesBackend), redacted(d.settings.TracesURL)))
	}
	if err != nil {
		return errorResponse(err)
	}

	// The metrics cover the request with a margin, and the query's range when it is larger.
	mq := q
	if from := req.Start.Add(-explainPad); from.Before(mq.TimeRange.From) {
		mq.TimeRange.From = from
	}
	if to := req.End.Add(explainPad); to.After(mq.TimeRange.To) {
		mq.TimeRange.To = to
	}
	scope := Query{Instance: regexp.QuoteMeta(req.Instance)}
	if req.Model != "" {
		scope.Model = regexp.QuoteMeta(req.Model)
	}
	// The peers and the metrics are independent: fetched at once.
	var (
		around  []traces.Request
		skipped error
		diag    *Diagnosis
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		around, skipped = peers(ctx, d, req)
	}()
	diag, err = d.diagnose(ctx, mq, scope, nil, correlate.Signals())
	wg.Wait()
	in := correlate.Input{Requests: around, From: req.Start, To: req.End}
	var notices []string
	if skipped != nil {
		notices = append(notices, "The other requests of this instance could not be read, so this one is not compared with its window (no anomaly reasons): "+skipped.Error())
	}
	if err != nil {
		notices = append(notices, "The metrics could not be read, so the request is explained without its metric state and findings: "+err.Error())
	} else {
		in.Set, in.Findings = diag.Set, diag.Result.Findings
	}
	res := correlate.Join(in, correlate.Options{})
	notices = append(notices, res.Notices...)
	row := slices.IndexFunc(res.Rows, func(r correlate.Row) bool { return r.TraceID == req.TraceID })
	e := correlate.Explain(res.Rows[row])
	if query.Format == explainAnnotation {
		// The drill-down draws the request's interval on its graphs from this frame alone.
		return backend.DataResponse{Frames: data.Frames{frames.RequestInterval(e)}}
	}
	out := frames.Explanation(e, signalInfo, notices)
	if diag != nil {
		// One graph of the window around the request, whatever range the query came with
		// (Grafana's trace links send the span's time ± an hour or more).
		shown := []series.Signal{series.TTFTP99}
		for _, js := range correlate.Joined {
			shown = append(shown, js.Signal)
		}
		sig := frames.ExplanationSignals(diag.Set, shown, signalInfo, req.Start.Add(-explainPad), req.End.Add(explainPad), strings.Join(diag.Fetch.Queries, "\n"))
		// After the stages, before the request's interval that is drawn on it.
		out = slices.Insert(out, len(out)-1, sig)
	}
	return backend.DataResponse{Frames: out}
}

// peers returns the request with the others of its instance around it, so that it is
// compared with its window as the requests query compares it. When they cannot be had, the
// request is explained alone, without anomaly reasons, and the error says why.
func peers(ctx context.Context, d *Datasource, req traces.Request) ([]traces.Request, error) {
	around, _, err := d.traces.Search(ctx, traces.Query{From: req.Start.Add(-explainPad), To: req.Start.Add(explainPad),
		Instances: []string{req.Instance}, Limit: traces.DefaultMaxLimit})
	if err != nil {
		return []traces.Request{req}, err
	}
	out := slices.DeleteFunc(around, func(r traces.Request) bool { return r.TraceID == req.TraceID })
	return append(out, req), nil
}

func backendName(b string) string {
	if b == TracesTempo {
		return "Tempo"
	}
	return "Jaeger"
}
