// Package plan writes what each query type will fetch, before any I/O: a pure function per
// query type from the query and the data source's settings to a plan (the range-query step
// chosen from Grafana's interval, the evaluated range and the lookback its rules need, the
// baseline and current windows of a verdict, the signals and filters of every Prometheus
// request, the label-values lookup of a template variable). The plan is plain data: the plugin
// hands its signals.Requests to the signals client, which writes their PromQL for the detected
// vocabulary (signals.NewPlan, pure too) and runs every query of the plan in one bounded
// fan-out (signals.Client.FetchAll); the evaluation and the frames follow, and the frames'
// executedQueryString shows the plan as fetched (Executed).
//
// A query that cannot be planned (an unknown signal or rule, a range shorter than a step, a
// baseline that is not a time) fails here with a plugin error, before any request is sent.
//
// The requests and explain query types plan in two phases, each pure: their trace searches
// depend on an answer. NewRequests plans a requests query's metrics (a diagnosis over the
// range and a tail past it); Requests.Searches then writes its trace searches from what the
// metrics answered, given as plain values (RequestMetrics: the series, the findings, each
// instance's threshold of a request that stands out), with the filters the searches could not
// carry (Searches.Filter, for the requests they return); Requests.Rows is how many rows the
// answer keeps. The package imports nothing that does the join: the caller computes the
// thresholds and joins what the searches return.
// An explain query reads its trace first; NewExplain then plans, from the trace's
// instance, model and time, the metrics around the request and the search of its peers, which
// the plugin fetches at once (ExplainShown and Shown: the signals and the window its
// explanation graphs). Their Executed joins the metrics' plan as fetched with the trace
// searches as sent.
// Their metrics that cannot be planned (MetricsErr) do not fail the query: the traces are
// still read, and a notice says what is missing, as when the metrics cannot be read.
package plan
