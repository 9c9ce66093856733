package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// injected is what the simulator injects into a demo's scenario: its ground truth, from the
// simulator's own run of the same scenario and window length.
func injected(t *testing.T, name string, generation vllm.Generation) (sim.Scenario, []sim.Finding) {
	t.Helper()
	sc, err := sim.LookupGeneration(name, generation)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sc, time.Now().Add(-demoRun).Truncate(demoScrape), demoRun, demoScrape, sim.WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	return sc, res.Truth
}

func TestDemoFindsEveryFaultOfItsScenario(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		// scenario and generation are what the arguments select.
		scenario   string
		generation vllm.Generation
	}{
		{"the default fleet", nil, demoScenario, ""},
		{"V0 metric names", []string{"--scenario", sim.RuleKVCacheSaturated, "--generation", "v0"}, sim.RuleKVCacheSaturated, vllm.GenerationV0},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, truth := injected(t, c.scenario, c.generation)
			if len(truth) == 0 {
				t.Fatalf("%s injects no fault: the test would test nothing", c.scenario)
			}
			rep := report(t, cli(t, nil, append([]string{"demo", "--output", "json"}, c.args...)...))
			if len(rep.Instances) != len(sc.Instances) {
				t.Errorf("%d instances evaluated, want the scenario's %d", len(rep.Instances), len(sc.Instances))
			}
			for _, tr := range truth {
				if !slices.ContainsFunc(rep.Findings, func(f row) bool { return f["rule"] == tr.Rule && f["instance"] == tr.Instance }) {
					t.Errorf("the injected %s on %s is not among the findings", tr.Rule, tr.Instance)
				}
			}
		})
	}
}

func TestDemoRejects(t *testing.T) {
	checkRejections(t, []rejection{
		{"an unknown scenario", []string{"demo", "--scenario", "no_such_fault"}, "demo --list"},
		{"an unknown metric generation", []string{"demo", "--generation", "v2"}, "want v0 or v1"},
		{"a Prometheus of its own", []string{"demo", "--prometheus", "http://127.0.0.1:9090"}, "drop --prometheus"},
	})
}

func TestDemoListNamesEveryScenario(t *testing.T) {
	var out strings.Builder
	if code := run(context.Background(), []string{"demo", "--list"}, &out, io.Discard, func(string) string { return "" }); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, name := range append(sim.Scenarios(), sim.FleetPrefix+"N") {
		if !strings.Contains(out.String(), "\n"+name+" ") && !strings.HasPrefix(out.String(), name+" ") {
			t.Errorf("--list does not name %s:\n%s", name, out.String())
		}
	}
}

// report decodes a JSON diagnosis of the command that exited with findings or none.
func report(t *testing.T, r result) diagnosisReport {
	t.Helper()
	return decodeReport[diagnosisReport](t, r, exitCritical)
}

// TestSavedDemoReadsTheSame: a demo saved with --save is diagnosed the same by --from-dir
// (the embedded Prometheus on the directory) and by a real Prometheus started on it.
func TestSavedDemoReadsTheSame(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	demo := report(t, cli(t, nil, "demo", "--scenario", sim.RuleKVCacheSaturated, "--save", dir, "--output", "json"))
	if len(demo.Findings) == 0 {
		t.Fatal("the demo finds nothing: the comparison would test nothing")
	}
	saved := report(t, cli(t, nil, "--from-dir", dir, "--output", "json"))
	if !reflect.DeepEqual(saved, demo) {
		t.Fatalf("--from-dir reads the saved demo differently:\ndemo     %+v\nfrom-dir %+v", demo, saved)
	}
	real := testbed.PrometheusOn(t, dir)
	got := report(t, cli(t, nil, "--prometheus", real.URL, "--from", demo.Range.From, "--to", demo.Range.To, "--output", "json"))
	if !reflect.DeepEqual(got, demo) {
		t.Fatalf("a real Prometheus on the saved directory answers differently:\nembedded %+v\nreal     %+v", demo, got)
	}
}

func TestTSDBDirectoryRejects(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRejections(t, []rejection{
		{"--from-dir that does not exist", []string{"--from-dir", filepath.Join(t.TempDir(), "absent")}, "is not a directory"},
		{"--from-dir without samples", []string{"--from-dir", t.TempDir()}, "holds no samples"},
		{"--from-dir beside --prometheus", []string{"--from-dir", full, "--prometheus", "http://127.0.0.1:9090"}, "drop one"},
		{"--save into a directory with files", []string{"demo", "--save", full}, "is not empty"},
	})
}

// BenchmarkDemo measures the default demo end to end in-process: the simulation, the
// embedded Prometheus's backfill and the diagnosis (README promises under 30 s on two cores).
func BenchmarkDemo(b *testing.B) {
	for b.Loop() {
		if code := run(context.Background(), []string{"demo", "--output", "json"}, io.Discard, io.Discard, func(string) string { return "" }); code > exitCritical {
			b.Fatalf("exit %d", code)
		}
	}
}
