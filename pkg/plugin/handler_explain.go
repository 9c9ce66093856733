package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// explainPad is how much of the metrics before and after a request its explanation shows.
const explainPad = 10 * time.Minute

// handleExplain answers an explain query: one request by trace id, its stages, the findings
// active while it ran, and the signals of its instance around it.
func handleExplain(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	if strings.TrimSpace(query.TraceID) == "" {
		return badQuery(errors.New("explain needs a trace id: set traceId, or write the query as explain <traceId>"))
	}
	req, err := d.traces.Get(ctx, query.TraceID)
	if errors.Is(err, traces.ErrNotFound) {
		return tracesError(fmt.Errorf("%w: no trace %s in %s at %s: it may have expired or been sampled out", traces.ErrNotFound,
			strings.TrimSpace(query.TraceID), backendName(d.settings.TracesBackend), redacted(d.settings.TracesURL)))
	}
	if err != nil {
		return tracesError(err)
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
	around, skipped := peers(ctx, d, req)
	in := correlate.Input{Requests: around, From: req.Start, To: req.End}
	var notices []string
	if skipped != nil {
		notices = append(notices, "The other requests of this instance could not be read, so this one is not compared with its window (no anomaly reasons): "+skipped.Error())
	}
	diag, err := d.diagnose(ctx, mq, scope, nil, correlate.Signals())
	if err != nil {
		notices = append(notices, "The metrics could not be read, so the request is explained without its metric state and findings: "+err.Error())
	} else {
		in.Set, in.Findings = diag.Set, diag.Result.Findings
	}
	res := correlate.Join(in, correlate.Options{})
	notices = append(notices, res.Notices...)
	row := slices.IndexFunc(res.Rows, func(r correlate.Row) bool { return r.TraceID == req.TraceID })
	e := correlate.Explain(res.Rows[row])
	out := frames.Explanation(e, signalInfo, notices)
	if diag != nil {
		shown := []series.Signal{series.TTFTP99}
		for _, js := range correlate.Joined {
			shown = append(shown, js.Signal)
		}
		out = append(out, frames.Signals(diag.Set, shown, signalInfo, strings.Join(diag.Fetch.Queries, "\n"), nil)...)
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
