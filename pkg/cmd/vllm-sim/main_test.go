package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadInputFailsWithoutWritingAnything(t *testing.T) {
	dir := t.TempDir()
	om, truth := filepath.Join(dir, "out.om"), filepath.Join(dir, "truth.json")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown scenario lists the known ones", []string{"--scenario", "nope"}, "known scenarios: bucket_layouts, budget_above_need, client_timeouts"},
		{"bad start", []string{"--scenario", "healthy", "--start", "yesterday"}, "now-DURATION"},
		{"bad generation", []string{"--scenario", "healthy", "--generation", "v2"}, "want v0 or v1"},
		{"scrape longer than the run", []string{"--scenario", "healthy", "--duration", "10s", "--scrape-interval", "15s"}, "scrape interval"},
		{"unreachable OTLP endpoint", []string{"--scenario", "healthy", "--otlp-endpoint", "127.0.0.1:1"}, "not reachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"backfill", "--openmetrics", om, "--truth", truth, "--duration", "5m"}, tt.args...)
			err := run(context.Background(), args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			for _, p := range []string{om, truth} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

func TestBackfillWritesOpenMetricsAndTruth(t *testing.T) {
	dir := t.TempDir()
	om, truth := filepath.Join(dir, "out.om"), filepath.Join(dir, "truth.json")
	args := []string{"backfill", "--scenario", "client_timeouts", "--start", "now-1h", "--duration", "30m", "--openmetrics", om, "--truth", truth}
	if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(om)
	if !strings.HasSuffix(string(text), "# EOF\n") {
		t.Error("OpenMetrics file does not end in # EOF")
	}
	j, _ := os.ReadFile(truth)
	if !strings.Contains(string(j), `"rule": "client_timeouts"`) {
		t.Errorf("truth %s", j)
	}
}
