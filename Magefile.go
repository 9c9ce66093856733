//go:build mage

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"
)

// The SDK reads src/plugin.json by default; this plugin keeps it at the top level, where
// Grafana's loader and the front-end build read it too.
func init() {
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	})
}

// BuildAll builds the backend for Linux, macOS and Windows on amd64 and arm64 into dist/.
func BuildAll() {
	b := build.Build{}
	mg.Deps(b.Linux, b.LinuxARM64, b.Darwin, b.DarwinARM64, b.Windows, mg.F(b.Custom, "windows", "arm64"))
}

// BenchFleet runs the fleet benchmark by hand: N simulated instances × 3 h backfilled into a real
// Prometheus, one diagnosis through the plugin's gRPC against the floor (the PromQL it issued,
// from Prometheus's query log, sent at once), and 50 concurrent dashboard refreshes.
// VLLM_DIAG_FLEET_N chooses the sizes (default 10,50; 500 needs a bigger machine than 2 cores).
func BenchFleet() error {
	sizes := os.Getenv("VLLM_DIAG_FLEET_N")
	if sizes == "" {
		sizes = "10,50"
	}
	return sh.RunWithV(map[string]string{"VLLM_DIAG_FLEET_N": sizes},
		"go", "test", "./pkg/e2e", "-run", "^$", "-bench", "BenchmarkFleetDiagnosis", "-benchtime", "3x", "-timeout", "3h")
}

// Default is what a plain `mage` runs.
var Default = BuildAll

// Fuzz runs every fuzzer of ./pkg/... for FUZZTIME each (default 20s), one after the other:
// `go test -fuzz` takes one fuzzer of one package at a time. New crashers land in the
// package's testdata/fuzz, where `go test` then replays them as seeds.
func Fuzz() error {
	fuzztime := os.Getenv("FUZZTIME")
	if fuzztime == "" {
		fuzztime = "20s"
	}
	out, err := sh.Output("go", "test", "-list", "^Fuzz", "./pkg/...")
	if err != nil {
		return err
	}
	var fuzzers []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Fuzz") {
			fuzzers = append(fuzzers, line)
			continue
		}
		// "ok  <package> <time>" closes the list of a package.
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "ok" {
			for _, name := range fuzzers {
				fmt.Printf("fuzz %s %s for %s\n", f[1], name, fuzztime)
				if err := sh.RunV("go", "test", "-run", "^$", "-fuzz", "^"+name+"$", "-fuzztime", fuzztime, f[1]); err != nil {
					return fmt.Errorf("%s %s: %w", f[1], name, err)
				}
			}
			fuzzers = nil
		}
	}
	return nil
}
