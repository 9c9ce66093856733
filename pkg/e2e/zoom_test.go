package e2e_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// zoomFault is how long each fault of the zoom fleet lasts: the shortest the design promises
// to find alike at every zoom.
const zoomFault = 12 * time.Minute

// TestSameFindingsAtEveryZoom diagnoses one fleet (with prefix_miss_under_preemption's faulty
// instance beside the fleet's own) at the steps Grafana picks for different panel
// widths and ranges: the findings, 12-minute faults included, are the same at each, and match
// what the simulator injected (within one `for` and one step of the injected start; secondary
// findings name an injected cause). At a
// 10-minute step a 12-minute fault would fill one rate window only, and a rule with a 5-minute
// `for` needs two true steps: the rules run at the step their `for` needs (diagnosis.EvalStep)
// and report at the panel's.
func TestSameFindingsAtEveryZoom(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: simulates a fleet and starts Prometheus")
	}
	const n = 12
	sc, err := sim.Fleet(n)
	require.NoError(t, err)
	// prefix_miss_under_preemption's two faults at once, on one instance more.
	both, err := sim.Lookup(sim.PrefixMissUnderPreemption)
	require.NoError(t, err)
	extra := both.Instances[1]
	extra.Address = sim.FleetAddress(n+1, n)
	sc.Instances = append(sc.Instances, extra)
	from := 0.5
	for i := range sc.Instances {
		for j := range sc.Instances[i].Faults {
			f := &sc.Instances[i].Faults[j]
			f.From, f.To = from, from+zoomFault.Seconds()/runFor.Seconds()
		}
	}
	start := time.Now().Add(-runFor - 10*time.Minute).Truncate(10 * time.Minute)
	res, err := sim.Run(sc, start, runFor, scrape, sim.WithoutSpans())
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "zoom.om")
	require.NoError(t, res.WriteFile(file))
	prom := testbed.Prometheus(t, file)
	require.NotEmpty(t, res.Truth)

	rules, err := diagnosis.Rules(nil, nil)
	require.NoError(t, err)
	forOf := map[string]time.Duration{}
	for _, r := range rules {
		forOf[r.ID] = r.For
	}
	var want []string
	for _, tr := range res.Truth {
		want = append(want, tr.Rule+" on "+tr.Instance)
	}
	sort.Strings(want)

	tp, pc := pluginFor(t, prom.URL, map[string]any{})
	for _, step := range []time.Duration{15 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute} {
		t.Run(step.String(), func(t *testing.T) {
			resp := ask(t, tp, pc, query("A", map[string]any{"queryType": "diagnosis"}, start, start.Add(runFor), step))
			r := resp.Responses["A"]
			require.NoError(t, r.Error)
			require.Len(t, r.Frames, 1)
			var got []string
			for _, f := range findingsOf(t, r.Frames[0]) {
				j, _ := judge(f, res.Truth, forOf, step)
				assert.NotEqual(t, unexpected, j, "%s (secondary to %q) at step %s does not match an injected fault %v", f, f.secondaryTo, step, res.Truth)
				if j == hit {
					got = append(got, f.rule+" on "+f.instance)
				}
			}
			sort.Strings(got)
			assert.Equal(t, want, got, fmt.Sprintf("findings at step %s", step))
		})
	}
}
