package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestThePluginDoesNotLinkPrometheusServer: Prometheus's storage, scrape and web packages
// (pkg/embedprom, the CLI's embedded Prometheus) would add megabytes and minutes of build to
// the plugin's binary, which only talks to a Prometheus over HTTP.
func TestThePluginDoesNotLinkPrometheusServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// The PromQL parser the plugin uses links a few of tsdb's encoding packages; the TSDB
	// itself, the query engine, the scrape manager and the web API stay out.
	banned := map[string]bool{
		"github.com/seed/vllm-datasource/pkg/embedprom": true,
		"github.com/prometheus/prometheus/tsdb":         true,
		"github.com/prometheus/prometheus/promql":       true,
		"github.com/prometheus/prometheus/scrape":       true,
		"github.com/prometheus/prometheus/web/api/v1":   true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		if banned[pkg] {
			t.Errorf("the plugin links %s", pkg)
		}
	}
}
