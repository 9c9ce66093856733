package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// TestVerdictRuleExitsOnThePromise: verdict --rule prints whether the signal the rule's advice
// promises to move moved on the faulty instance of the kv_cache_saturated demo, and exits 1
// when it did not. The windows come from the scenario's configuration (when its fault's load
// starts and stops), not from the findings: preemptions stop once the long answers stop, and
// start when they start.
func TestVerdictRuleExitsOnThePromise(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	demo := report(t, cli(t, nil, "demo", "--scenario", sim.RuleKVCacheSaturated, "--save", dir, "--output", "json"))
	prom := testbed.PrometheusOn(t, dir)
	start, err := time.Parse(time.RFC3339, demo.Range.From)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.Lookup(sim.RuleKVCacheSaturated)
	if err != nil {
		t.Fatal(err)
	}
	fault := sc.Instances[1].Faults[0]
	at := func(share float64) time.Time { return start.Add(time.Duration(share * float64(demoRun))) }
	faultFrom, faultTo, end := at(fault.From), at(fault.To), at(1)
	cases := []struct {
		name     string
		baseline [2]time.Time
		from, to time.Time
		want     verdict.Outcome
		code     int
	}{
		{"the fault's window against the time after it: moved, exit 0", [2]time.Time{faultFrom.Add(10 * time.Minute), faultTo},
			faultTo.Add(10 * time.Minute), end, verdict.Moved, exitOK},
		{"the hour before against the fault: got worse, exit 1", [2]time.Time{start.Add(10 * time.Minute), faultFrom},
			faultFrom.Add(10 * time.Minute), faultTo, verdict.GotWorse, exitWarning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"verdict", "--rule", sim.RuleKVCacheSaturated, "--instance", sim.FaultyInstance, "--prometheus", prom.URL,
				"--baseline", stamp(c.baseline[0]) + ".." + stamp(c.baseline[1]), "--from", stamp(c.from), "--to", stamp(c.to)}
			rep := decodeReport[verdictReport](t, cli(t, nil, append(args, "--output", "json")...), exitWarning)
			if rep.ExitCode != c.code || rep.Rule != sim.RuleKVCacheSaturated || len(rep.Promises) != 1 {
				t.Fatalf("exit code %d, rule %q, %d promise rows; want %d, %s, one row", rep.ExitCode, rep.Rule, len(rep.Promises), c.code, sim.RuleKVCacheSaturated)
			}
			p := rep.Promises[0]
			if str(p, "outcome") != string(c.want) || str(p, "metric") != "preemption_rate" || str(p, "instance") != sim.FaultyInstance {
				t.Errorf("promise %v, want %s of preemption_rate on %s", p, c.want, sim.FaultyInstance)
			}
			table := cli(t, nil, args...)
			// The table wraps long cells: look for the short ones.
			if table.code != c.code || !strings.Contains(table.stdout, "Promise of kv_cache_saturated's advice") || !strings.Contains(table.stdout, string(c.want)) {
				t.Errorf("the table (exit %d, want %d) lacks the promise's outcome %q:\n%s", table.code, c.code, c.want, table.stdout)
			}
		})
	}
	t.Run("an unknown rule is one line on stderr naming the rules, exit 3", func(t *testing.T) {
		r := cli(t, nil, "verdict", "--rule", "kv_cache_saturatd", "--prometheus", prom.URL,
			"--baseline", stamp(start.Add(10*time.Minute))+".."+stamp(faultFrom), "--from", stamp(faultFrom), "--to", stamp(faultTo))
		if r.code != exitError || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, `unknown rule "kv_cache_saturatd"`) ||
			!strings.Contains(r.stderr, "the rules are engine_stalled") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
