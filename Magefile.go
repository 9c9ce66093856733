//go:build mage

package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// cliPlatforms are the platforms the plugin's backend is built for; the CLI follows them.
var cliPlatforms = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"},
}

// CLI builds the vllm-diagnose command for the same platforms, with the build tags the SDK
// gives the plugin (the same engine, compiled alike), into dist-cli/, beside the
// plugin's dist/ rather than in it: dist/ is the plugin folder copied into Grafana.
func CLI() error {
	for _, p := range cliPlatforms {
		out := filepath.Join("dist-cli", "vllm-diagnose_"+p[0]+"_"+p[1])
		if p[0] == "windows" {
			out += ".exe"
		}
		env := map[string]string{"GOOS": p[0], "GOARCH": p[1], "CGO_ENABLED": "0"}
		if err := sh.RunWith(env, "go", "build", "-tags", "arrow_json_stdlib", "-o", out, "./pkg/cmd/vllm-diagnose"); err != nil {
			return err
		}
	}
	return nil
}

// All builds the plugin's backend and the CLI for every platform.
func All() {
	mg.Deps(BuildAll, CLI)
}

// BenchFleet runs the fleet benchmark by hand: N simulated instances × 3 h backfilled into a real
// Prometheus, one diagnosis through the built plugin binary against the floor (the PromQL it issued,
// from Prometheus's query log, sent at once), and 50 concurrent dashboard refreshes.
// VLLM_DIAG_FLEET_N chooses the sizes (default 10,50; 500 takes about 20 minutes more on 2 cores
// to simulate and backfill, and 15 GB of disk for its OpenMetrics file).
func BenchFleet() error {
	sizes := os.Getenv("VLLM_DIAG_FLEET_N")
	if sizes == "" {
		sizes = "10,50"
	}
	return sh.RunWithV(map[string]string{"VLLM_DIAG_FLEET_N": sizes},
		"go", "test", "./pkg/e2e", "-run", "^$", "-bench", "BenchmarkFleetDiagnosis", "-benchtime", "3x", "-timeout", "3h")
}

// Default is what a plain `mage` runs.
var Default = All

// Fuzz runs every fuzzer of ./pkg/... for FUZZTIME each (default 20s), one after the other:
// `go test -fuzz` takes one fuzzer of one package at a time. New crashers land in the
// package's testdata/fuzz, where `go test` then replays them as seeds.
//
// Each input that finds new code is minimized before fuzzing goes on, by default for up to
// 60 s, and none of those runs count as execs: with a fresh cache the decoders' first finds
// (from kilobyte-sized recorded answers) took the whole bounded time, about 10 execs in 20 s.
// FUZZMINIMIZE (default 100x, i.e. 100 tries) bounds it.
func Fuzz() error {
	fuzztime := os.Getenv("FUZZTIME")
	if fuzztime == "" {
		fuzztime = "20s"
	}
	minimize := os.Getenv("FUZZMINIMIZE")
	if minimize == "" {
		minimize = "100x"
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
				if err := sh.RunV("go", "test", "-run", "^$", "-fuzz", "^"+name+"$", "-fuzztime", fuzztime, "-fuzzminimizetime", minimize, f[1]); err != nil {
					return fmt.Errorf("%s %s: %w", f[1], name, err)
				}
			}
			fuzzers = nil
		}
	}
	return nil
}
