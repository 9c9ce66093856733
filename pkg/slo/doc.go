// Package slo is the domain of service-level objectives: an objective as the data source's
// settings declare it (Parse), the attainment of an objective read from vLLM's histogram
// bucket rates as an interval (good events are the observations at or under the threshold;
// exact when the threshold is a bucket bound, else bounded by the bucket bounds around it),
// the error budget left over the objective's window (at the range's end, or at each of its steps:
// Budgets), burn rates and the multi-window,
// multi-burn-rate alert values built on them (page and ticket, burn.go), the attribution of
// misses to the diagnosis findings active when they happened (each finding's share: MissesOf),
// goodput, the served requests that met every objective, bounded as the histograms allow and
// given exactly per step by sampled requests' spans (SampledGoodput), and one request judged
// against the objectives from its span (Judge). It has no I/O: its input is
// the aligned series (pkg/series) and the diagnosis result (pkg/diagnosis) a query fetched and
// evaluated, or a request's span.
package slo
