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
// The requests and explain query types do not plan here yet: their trace searches depend on
// what the metrics answered (requests) or on the trace fetched first (explain); they reach the
// metrics through the diagnosis plan.
package plan
