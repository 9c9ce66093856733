// Package frames turns the domain's values (signals, findings, requests, explanations) into
// Grafana data frames: field names, units, labels, display names, notices and data links. It
// holds no query logic.
package frames
