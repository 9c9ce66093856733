package plugin

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// handleRequests answers a requests query: the vLLM spans of the range, each joined with the
// metric state at its start, the worst while it ran and the findings active, and flagged
// when it stands out in the window (DESIGN §3, §5).
func handleRequests(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	if d.traces == nil {
		return badQuery(errNoTraces)
	}
	instance, err := filterOf("instance", query.Instance)
	if err != nil {
		return badQuery(err)
	}
	model, err := filterOf("model", query.Model)
	if err != nil {
		return badQuery(err)
	}
	search := traces.Query{From: q.TimeRange.From, To: q.TimeRange.To, MinTTFT: query.MinTTFT, Limit: query.Limit,
		Instances: instance.exact, Models: model.exact}
	reqs, info, err := d.traces.Search(ctx, search)
	if err != nil {
		return tracesError(err)
	}
	kept := reqs[:0]
	for _, r := range reqs {
		if instance.match(r.Instance) && (r.Model == "" || model.match(r.Model)) {
			kept = append(kept, r)
		}
	}
	reqs = kept

	// The metrics must reach the end of the last request, which may finish after the range.
	mq := q
	for _, r := range reqs {
		if r.End.After(mq.TimeRange.To) {
			mq.TimeRange.To = r.End
		}
	}
	mq.TimeRange.To = mq.TimeRange.To.Add(d.step(mq))
	in := correlate.Input{Requests: reqs, From: q.TimeRange.From, To: q.TimeRange.To, Truncated: info.Truncated}
	var notices []string
	executed := []string{info.Query}
	diag, err := d.diagnose(ctx, mq, query, nil, correlate.Signals())
	if err != nil {
		notices = append(notices, "The metrics could not be read, so requests are shown without their metric state and findings: "+err.Error())
	} else {
		in.Set, in.Findings = diag.Set, diag.Result.Findings
		executed = append(executed, diag.Fetch.Queries...)
		for _, js := range correlate.Joined {
			if reason, ok := diag.Set.Absent[js.Signal]; ok {
				notices = append(notices, string(js.Signal)+" is not joined: "+reason)
			}
		}
	}
	res := correlate.Join(in, correlate.Options{})

	cov := res.Coverage.Text()
	if query.MinTTFT > 0 {
		cov += fmt.Sprintf(" (only spans with TTFT ≥ %g s were asked for)", query.MinTTFT)
	}
	notices = append([]string{cov}, notices...)
	if info.Truncated {
		notices = append(notices, fmt.Sprintf("The trace search stopped at its limit of %d traces: requests of the range may be missing; narrow the range or raise the limit.", info.Traces))
	}
	if info.Incomplete > 0 {
		notices = append(notices, fmt.Sprintf("%d span(s) lack latency attributes (an older vLLM, or a span that is not vLLM's): they are shown with what they carry, and their missing stages are empty.", info.Incomplete))
	}
	if info.SpansSkipped > 0 {
		notices = append(notices, fmt.Sprintf("%d span(s) of very large traces were not read.", info.SpansSkipped))
	}
	notices = append(notices, res.Notices...)

	rows := res.Rows
	if query.AnomalousOnly {
		anomalous := rows[:0]
		for _, r := range rows {
			if len(r.Reasons) > 0 {
				anomalous = append(anomalous, r)
			}
		}
		rows = anomalous
	}
	links := frames.TraceLinks{DatasourceUID: d.settings.TracesDatasourceUID, Backend: d.settings.TracesBackend}
	return backend.DataResponse{Frames: data.Frames{frames.Requests(rows, links, signalInfo, strings.Join(executed, "\n"), notices)}}
}

// filter is a query's instance or model filter: an exact value, a regular expression (Grafana
// interpolates multi-value template variables as one), or empty for all.
type filter struct {
	re *regexp.Regexp
	// exact holds the value when it has no regular-expression syntax but dots (which match
	// themselves too, as in "10.0.0.1:8000"), so the trace backend can filter on it.
	exact []string
}

func filterOf(what, v string) (filter, error) {
	if v == "" {
		return filter{}, nil
	}
	_, err := regexp.Compile(v) // alone too: anchored, an unbalanced ")" closes the group and passes
	re, anchoredErr := regexp.Compile("^(?:" + v + ")$")
	if err == nil {
		err = anchoredErr
	}
	if err != nil {
		return filter{}, fmt.Errorf("%s filter %q is neither an exact value nor a valid regular expression: %v", what, v, err)
	}
	f := filter{re: re}
	if !strings.ContainsAny(v, `\^$*+?()[]{}|`) {
		f.exact = []string{v}
	}
	return f, nil
}

func (f filter) match(v string) bool { return f.re == nil || f.re.MatchString(v) }
