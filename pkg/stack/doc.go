// Package stack checks the stack a user runs, without running it: docker-compose.yaml and the
// Dockerfile, the Prometheus, Tempo and OTel Collector configurations under docker/, the
// provisioned data sources, dashboards and alert rules, and the dashboards themselves. Every
// dashboard target and alert query must follow the plugin's query schema (src/schema, generated
// from pkg/plugin's models by pkg/plugin/contract) and name the signals and rule ids the plugin
// knows, and the provisioned data sources' settings its settings schema, so that renaming any of
// them breaks a test here instead of a user's panel.
//
// Targets lists every query of the dashboards, and DecodeQuery and DecodeRequestQuery read one,
// for tests that run them against a real back end.
package stack
