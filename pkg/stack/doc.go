// Package stack checks the stack a user runs, without running it: docker-compose.yaml and the
// Dockerfile, the Prometheus, Tempo and OTel Collector configurations under docker/, the
// provisioned data sources, dashboards and alert rules, and the dashboards themselves. Every
// dashboard target and alert query must be a query the plugin accepts, with the signal names and
// rule ids the plugin knows, so that renaming either breaks a test here instead of a user's panel.
//
// Targets lists every query of the dashboards, for tests that run them against a real back end.
package stack
