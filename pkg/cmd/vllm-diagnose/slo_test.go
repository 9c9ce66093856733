package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// objectivesFile writes an objectives file for --slos.
func objectivesFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "slos.json")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// burnObjectives are the objectives of the slo command's tests: TTFT within 1 s (a bucket bound)
// and availability, as the demo stack provisions them.
const burnObjectives = `[{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
	{"name": "availability", "indicator": "availability", "objective": 0.999, "window": "28d"}]`

func TestSLORejects(t *testing.T) {
	good := objectivesFile(t, burnObjectives)
	prom := []string{"--prometheus", "http://127.0.0.1:1"}
	checkRejections(t, []rejection{
		{"no objectives file", append([]string{"slo"}, prom...), "slo needs the objectives: --slos FILE"},
		{"an objectives file that cannot be read", append([]string{"slo", "--slos", filepath.Join(t.TempDir(), "none.json")}, prom...), "cannot read the objectives file"},
		{"an objectives file that is not a list", append([]string{"slo", "--slos", objectivesFile(t, `{"name": "x"}`)}, prom...), "not a list of objectives"},
		{"a bad objective", append([]string{"slo", "--slos", objectivesFile(t, `[{"name": "x", "indicator": "ttft", "threshold": 1, "objective": 99, "window": "28d"}]`)}, prom...), `slos[0] "x": objective 99`},
		{"an unknown indicator", append([]string{"slo", "--slos", objectivesFile(t, `[{"name": "x", "indicator": "latency", "threshold": 1, "objective": 0.9, "window": "28d"}]`)}, prom...), `indicator "latency"`},
		{"no objective in the file", append([]string{"slo", "--slos", objectivesFile(t, `[]`)}, prom...), "holds no objective"},
		{"--slo naming no objective of the file", append([]string{"slo", "--slos", good, "--slo", "ttft-2s"}, prom...), `--slo "ttft-2s" is not an objective`},
		{"--output prometheus", append([]string{"slo", "--slos", good, "-o", "prometheus"}, prom...), "slo writes table or json"},
		{"--to without --from", append([]string{"slo", "--slos", good, "--to", "now"}, prom...), "--to needs --from"},
		{"no Prometheus", []string{"slo", "--slos", good}, "--prometheus is required"},
		{"an argument", append([]string{"slo", "--slos", good, "ttft-1s"}, prom...), "unknown command"},
	})
}

// TestSLOExitCodes runs the slo command on a simulated fleet of 6 over 4 hours, whose faults
// strike vllm-01, -03 and -05 in its middle third (sim.Fleet), at moments the simulator's ground
// truth gives: before the first fault nothing fires (exit 0); 40 minutes into the last to begin,
// the TTFT budget pages (exit 2) on faulty instances only; 40 minutes after the last has ended,
// the pages' short windows hold no fault, and the budget the faults spent makes tickets (exit 1).
func TestSLOExitCodes(t *testing.T) {
	const runFor = 4 * time.Hour
	// The simulator's binary, built without the race detector: in this test's process the
	// 6 × 4 h simulation would take about thirty times as long.
	start := time.Now().Add(-runFor - 10*time.Minute).Truncate(time.Minute)
	var truth []sim.Finding
	file, err := testbed.SimBackfill(simBin, t.TempDir(), sim.Job, sim.Job, &truth, "--scenario", sim.FleetPrefix+"6",
		"--start", start.Format(time.RFC3339), "--duration", runFor.String(), "--scrape-interval", scrape.String())
	if err != nil {
		t.Fatal(err)
	}
	prom := testbed.Prometheus(t, file)
	slos := objectivesFile(t, burnObjectives)
	faultAt, faultRule := map[string][2]time.Time{}, map[string]string{}
	first, lastStart, lastEnd := truth[0].Start, truth[0].Start, truth[0].End
	for _, f := range truth {
		faultAt[f.Instance], faultRule[f.Instance] = [2]time.Time{f.Start, f.End}, f.Rule
		first, lastStart, lastEnd = minTime(first, f.Start), maxTime(lastStart, f.Start), maxTime(lastEnd, f.End)
	}
	if after := lastEnd.Add(40 * time.Minute); after.After(start.Add(runFor)) {
		t.Fatalf("the faults end at %s, too late in the run to see tickets alone 40 minutes after", lastEnd)
	}
	for _, c := range []struct {
		name     string
		to       time.Time
		slo      string
		code     int
		severity string
	}{
		{"before the faults: nothing fires", first.Add(-5 * time.Minute), "", exitOK, ""},
		{"40 minutes into the faults: the TTFT budget pages", lastStart.Add(40 * time.Minute), "", exitCritical, "page"},
		{"40 minutes after them: tickets only", lastEnd.Add(40 * time.Minute), "", exitWarning, "ticket"},
		{"--slo availability alone: the faults abort no request", lastStart.Add(40 * time.Minute), "availability", exitOK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			to := c.to.Truncate(time.Second)
			args := []string{"slo", "--prometheus", prom.URL, "--slos", slos, "--from", to.Add(-10 * time.Minute).Format(time.RFC3339),
				"--to", to.Format(time.RFC3339)}
			if c.slo != "" {
				args = append(args, "--slo", c.slo)
			}
			var stdout, stderr strings.Builder
			code := run(context.Background(), append(args, "-o", "json"), &stdout, &stderr, func(string) string { return "" })
			rep := decodeReport[sloReport](t, result{stdout: stdout.String(), stderr: stderr.String(), code: code}, exitCritical)
			if code != c.code || rep.ExitCode != c.code {
				t.Errorf("exit %d (report %d), want %d", code, rep.ExitCode, c.code)
			}
			firing := 0
			for _, a := range rep.Alerts {
				if c.slo != "" && a.SLO != c.slo {
					t.Errorf("an alert of %s, but --slo %s", a.SLO, c.slo)
				}
				if !a.Firing {
					continue
				}
				firing++
				fault, faulty := faultAt[a.Instance]
				if !faulty || to.Before(fault[0]) {
					t.Errorf("%s %s fires on %s, where no fault was injected before %s", a.SLO, a.Severity, a.Instance, to.Format(time.TimeOnly))
				}
				if a.Severity != c.severity && !(c.severity == "page" && a.Severity == "ticket") {
					t.Errorf("%s %s fires on %s; want only %s", a.SLO, a.Severity, a.Instance, c.severity)
				}
			}
			if (firing > 0) != (c.code != exitOK) {
				t.Errorf("%d alerts firing with exit %d", firing, c.code)
			}
			if len(rep.Status) == 0 {
				t.Error("no status rows")
			}
			var table strings.Builder
			if tc := run(context.Background(), args, &table, io.Discard, func(string) string { return "" }); tc != code {
				t.Errorf("the table's exit %d differs from the JSON's %d", tc, code)
			}
			for _, a := range rep.Alerts {
				if a.Firing && !tableSays(table.String(), a.SLO, a.Instance, a.Severity+" (") {
					t.Errorf("no line of the table names %s on %s with %s:\n%s", a.SLO, a.Instance, a.Severity, table.String())
				}
			}
			// A page fires while a fault burns the budget: the finding of the fault the simulator
			// injected there holds most of the range's misses, in the attribution and the table.
			for _, a := range rep.Alerts {
				if !a.Firing || a.Severity != "page" {
					continue
				}
				top := ""
				for _, r := range rep.Attribution {
					if str(r, "slo") == a.SLO && str(r, "instance") == a.Instance {
						top = str(r, "rule") // the rows come largest share first
						break
					}
				}
				if top != faultRule[a.Instance] || !tableSays(table.String(), a.SLO, a.Instance, top+" (") {
					t.Errorf("%s on %s: most misses under %q, want the injected %s, in the table too:\n%s", a.SLO, a.Instance, top, faultRule[a.Instance], table.String())
				}
			}
		})
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// tableSays reports whether a line of a table holds every one of the words.
func tableSays(table string, words ...string) bool {
	for _, l := range strings.Split(table, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return true
		}
	}
	return false
}
