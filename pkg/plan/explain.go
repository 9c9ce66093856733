package plan

import (
	"regexp"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// ExplainPad is how much of the metrics before and after a request its explanation shows, and
// how far around its start its peers are searched.
const ExplainPad = 10 * time.Minute

// Explain is the plan of an explain query once its trace is fetched (the trace says which
// instance and when): the metrics of its instance and model around it, and the search of its
// peers, the other requests of its instance around its start, that it is compared with. The
// two are independent: they are fetched at once.
type Explain struct {
	Request traces.Request
	// Metrics is the diagnosis of every rule over the request ± ExplainPad, or the query's
	// range when it is larger. MetricsErr says why it could not be planned: the request is
	// then explained without its metric state and findings, as when they cannot be read.
	Metrics    Diagnosis
	MetricsErr error
	Peers      traces.Query
}

// NewExplain plans the fetch of an explain query whose trace is req. Its instance and model
// are quoted into the filters, so that they match exactly; its peers are searched with its
// span vocabulary (Request.Generation): they come from the same engine.
func NewExplain(s Settings, sc Scope, req traces.Request) Explain {
	msc := Scope{From: sc.From, To: sc.To, Interval: sc.Interval, Instance: regexp.QuoteMeta(req.Instance)}
	if from := req.Start.Add(-ExplainPad); from.Before(msc.From) {
		msc.From = from
	}
	if to := req.End.Add(ExplainPad); to.After(msc.To) {
		msc.To = to
	}
	if req.Model != "" {
		msc.Model = regexp.QuoteMeta(req.Model)
	}
	p := Explain{Request: req, Peers: traces.Query{From: req.Start.Add(-ExplainPad), To: req.Start.Add(ExplainPad),
		Instances: []string{req.Instance}, Limit: traces.DefaultMaxLimit, Generation: req.Generation()}}
	p.Metrics, p.MetricsErr = NewDiagnosis(s, msc, nil, series.JoinSignals())
	return p
}

// Shown is the window of the metrics an explanation graphs: the request ± ExplainPad, whatever
// range the query came with (Grafana's trace links send the span's time ± an hour or more).
func (p Explain) Shown() (from, to time.Time) {
	return p.Request.Start.Add(-ExplainPad), p.Request.End.Add(ExplainPad)
}

// ExplainShown is the signals an explanation graphs over Shown: the TTFT p99 and the signals a
// request is joined with.
func ExplainShown() []series.Signal {
	shown := []series.Signal{series.TTFTP99}
	for _, js := range series.Joined {
		shown = append(shown, js.Signal)
	}
	return shown
}

// Executed is the explain plan as fetched, for the frames' executedQueryString: the metrics'
// plan (empty when they could not be read), then the peers' search as sent.
func (p Explain) Executed(metrics, peers string) string {
	return joinNonEmpty(metrics, peers)
}
