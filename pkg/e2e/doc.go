// Package e2e holds the end-to-end tests of the whole plugin: simulator scenarios backfilled
// into a real Prometheus (and their spans sent to a real Jaeger), queried through the plugin's
// gRPC protocol the way Grafana queries it. It has no code of its own beyond test helpers.
package e2e
