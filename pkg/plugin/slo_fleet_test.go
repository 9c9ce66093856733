package plugin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// The fleet's objectives: TTFT under 1 s (a bucket bound of vLLM's TTFT histogram) and under
// 2 s (between the bounds 1 and 2.5), and a request's time per output token under 25 ms, which
// the fault that slows decoding misses.
var fleetSLOs = []map[string]any{
	{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
	{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "7d"},
	{"name": "tpot-25ms", "indicator": "tpot", "threshold": 0.025, "objective": 0.99, "window": "7d"},
}

// sloRestarted is a healthy instance of the fleet that restarts halfway, down for two minutes:
// its counters reset, and its scrapes have a gap.
const sloRestarted = 10

// TestFleetSLO checks the slo query on a simulated fleet of 12 instances, all of whose spans
// the simulator keeps: each request's TTFT as the simulator injected it is the ground truth.
func TestFleetSLO(t *testing.T) {
	sc, err := sim.Fleet(fleetSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, faulty := sim.FleetFaulty(fleetSize)[sc.Instances[sloRestarted].Address]; faulty {
		t.Fatalf("instance %d of the fleet is faulty: pick a healthy one to restart", sloRestarted)
	}
	sc.Instances[sloRestarted].Faults = []sim.Fault{{Rule: "restart", From: 0.5, To: 0.5 + 1e-9, Restart: true, Downtime: 120}}
	start := time.Now().Truncate(time.Minute).Add(-fleetRun - 5*time.Minute)
	res, err := sim.Run(sc, start, fleetRun, simScrape)
	if err != nil {
		t.Fatal(err)
	}
	prom := simPrometheus(t, res)
	pc := pluginContext(prom.URL, map[string]any{"scrapeInterval": simScrape.String(), "slos": fleetSLOs})
	from, to := res.Start, res.Start.Add(fleetRun)
	askAll := func(queryType, format string) data.Frames {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		r, err := grpcPlugin(t).QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc,
			Queries: []backend.DataQuery{rangeQuery("S", from, to, map[string]any{"queryType": queryType, "format": format})}})
		if err != nil {
			t.Fatal(err)
		}
		out := r.Responses["S"]
		if out.Error != nil {
			t.Fatalf("%s %s: %v", queryType, format, out.Error)
		}
		return out.Frames
	}
	ask := func(queryType, format string) *data.Frame {
		fs := askAll(queryType, format)
		if len(fs) != 1 {
			t.Fatalf("%s %s: %d frames, want 1", queryType, format, len(fs))
		}
		return fs[0]
	}
	query := func(format string) *data.Frame { return ask("slo", format) }
	t.Run("attainment holds the injected attainment", func(t *testing.T) {
		fleetAttainment(t, query("status"), res, from, to)
	})
	t.Run("each faulty instance's misses go most to its fault's finding", func(t *testing.T) {
		fleetAttribution(t, query("attribution"))
	})
	t.Run("the findings say the misses the attribution gave them", func(t *testing.T) {
		findingsMisses(t, ask("diagnosis", "findings"), query("attribution"))
	})
	t.Run("goodput holds the injected goodput", func(t *testing.T) {
		fleetGoodput(t, askAll("slo", "goodput"), res, from, to)
	})
	t.Run("the fleet table names the objective each instance is closest to breaking", func(t *testing.T) {
		fleetWorstObjective(t, ask("diagnosis", "fleet"), res, from, to)
	})
	t.Run("the budget burn-down ends at the status's budget and falls with the injected misses", func(t *testing.T) {
		budget := askAll("slo", "budget")
		fleetBudgetEndsAtTheStatus(t, budget, query("status"))
		fleetBudgetFollowsTheInjectedMisses(t, budget, res, from)
	})
}

// budgetTarget is the objective of every fleet SLO: a miss share m leaves 1 − m / (1 − target)
// of the budget.
const budgetTarget = 0.99

// fleetBudgetEndsAtTheStatus: every status row's budget_remaining is what its events leave of
// the budget, to 0.001 of them in miss share: the objectives' windows hold the whole run, which
// is the status's range, so the budget left is 1 − (1 − attainment_low) / (1 − objective); and
// every budget series ends at its status row's budget_remaining (one computation serves both).
// (Before the status read its window as the budget format does, its coarse 40-minute steps
// straddled the start of this two-hour run's data: 0.003 to 0.069 off in miss share.)
func fleetBudgetEndsAtTheStatus(t *testing.T, budget data.Frames, status *data.Frame) {
	type key struct{ slo, instance, model string }
	want := map[key]float64{}
	for i := range status.Rows() {
		k := key{cellString(status, "slo", i), cellString(status, "instance", i), cellString(status, "model_name", i)}
		want[k] = cellFloat(status, "budget_remaining", i)
		if events := 1 - (1-cellFloat(status, "attainment_low", i))/(1-cellFloat(status, "objective", i)); math.Abs(want[k]-events)*(1-budgetTarget) > 0.001 {
			t.Errorf("%v: status budget_remaining %.3f, its events leave %.3f", k, want[k], events)
		}
	}
	seen := 0
	for _, f := range budget {
		v := f.Fields[1]
		k := key{v.Labels["slo"], v.Labels["instance"], v.Labels["model_name"]}
		w, ok := want[k]
		if !ok {
			t.Errorf("%v: a budget series without a status row", k)
			continue
		}
		seen++
		if got := v.At(f.Rows() - 1).(float64); math.Abs(got-w) > 1e-9 {
			t.Errorf("%v: budget left %.6f at the range's end, the status's budget_remaining %.6f", k, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d budget series, want one per status row (%d)", seen, len(want))
	}
}

// fleetBudgetFollowsTheInjectedMisses: on each instance, at each step, ttft-1s's budget left
// (its window holds the whole run) is what the requests the simulator served until then leave
// of it, to 0.01 of them in miss share (the attainment's tolerance), once 200 requests are in:
// until the step, or until a scrape before it (a request's first token within the last scrape
// interval may not be scraped yet);
// and the instances whose injected misses overspend the budget are those whose series ends
// below zero.
func fleetBudgetFollowsTheInjectedMisses(t *testing.T, budget data.Frames, res *sim.Result, from time.Time) {
	const minRequests = 200
	// The first-token times, as injectedAttainment reads them, of each instance's requests and
	// of those over 1 s, sorted.
	all, missed := map[string][]time.Time{}, map[string][]time.Time{}
	for _, sp := range res.Spans {
		at := sp.Start.Add(time.Duration(sp.TTFT * float64(time.Second)))
		if !at.After(from) {
			continue
		}
		all[sp.Instance] = append(all[sp.Instance], at)
		if sp.TTFT > 1 {
			missed[sp.Instance] = append(missed[sp.Instance], at)
		}
	}
	upTo := func(ts []time.Time, at time.Time) int {
		return sort.Search(len(ts), func(i int) bool { return ts[i].After(at) })
	}
	overspent, injectedOverspent := 0, 0
	for _, f := range budget {
		v := f.Fields[1]
		instance := v.Labels["instance"]
		if v.Labels["slo"] != "ttft-1s" || instance == slo.Fleet {
			continue
		}
		slices.SortFunc(all[instance], time.Time.Compare)
		slices.SortFunc(missed[instance], time.Time.Compare)
		checked := 0
		for i := range f.Rows() {
			at := f.Fields[0].At(i).(time.Time)
			left := func(at time.Time) (float64, int, int) {
				n, m := upTo(all[instance], at), upTo(missed[instance], at)
				return 1 - float64(m)/float64(n)/(1-budgetTarget), m, n
			}
			injected, m, n := left(at)
			scraped, _, scrapedN := left(at.Add(-simScrape))
			if scrapedN < minRequests {
				continue
			}
			checked++
			got := v.At(i).(float64)
			lo, hi := min(injected, scraped), max(injected, scraped)
			if (lo-got)*(1-budgetTarget) > 0.01 || (got-hi)*(1-budgetTarget) > 0.01 {
				t.Errorf("%s at %s: budget left %.3f, the injected misses leave %.3f to %.3f (%d of %d requests)", instance, at.Format(time.TimeOnly), got, lo, hi, m, n)
			}
			if i == f.Rows()-1 {
				t.Logf("%s: budget left %.3f at the range's end, injected %.3f (%d of %d requests missed)", instance, got, injected, m, n)
				if injected < 0 {
					injectedOverspent++
				}
				if got < 0 {
					overspent++
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no step with %d requests in", instance, minRequests)
		}
	}
	if injectedOverspent == 0 || overspent != injectedOverspent {
		t.Errorf("%d instances overspent their budget, the simulator made %d; want as many, and some", overspent, injectedOverspent)
	}
}

// fleetWorstObjective: each line of the fleet table names the objective with the least budget
// left (the lower bounds): a TTFT one where the simulator's requests missed 1 s clearly more
// often than 25 ms per output token, tpot-25ms where the other way round (ttft-2s's lower
// bound counts the misses of 1 s, its bucket bound below, so either TTFT objective may be
// named); a ttft-1s line's attainment is at most the injected one.
func fleetWorstObjective(t *testing.T, f *data.Frame, res *sim.Result, from, to time.Time) {
	if f.Rows() != fleetSize {
		t.Fatalf("%d lines, want %d", f.Rows(), fleetSize)
	}
	for i := range f.Rows() {
		instance, name := cellString(f, "instance", i), cellString(f, "slo", i)
		attainment, n := injectedAttainment(res, instance, 1, from, to)
		ttftMisses := int(math.Round((1 - attainment) * float64(n)))
		tpotMisses := 0
		for _, sp := range res.Spans {
			if sp.Instance == instance && sp.End.After(from) && !sp.End.After(to) && sp.CompletionTokens > 1 && sp.Decode/float64(sp.CompletionTokens-1) > 0.025 {
				tpotMisses++
			}
		}
		t.Logf("%s: %s, attainment at least %.4f, budget left at least %.3f; injected misses ttft-1s %d, tpot-25ms %d",
			instance, name, cellFloat(f, "slo_attainment", i), cellFloat(f, "slo_budget_left", i), ttftMisses, tpotMisses)
		switch {
		case 2*ttftMisses > 3*tpotMisses && !strings.HasPrefix(name, "ttft-"), 2*tpotMisses > 3*ttftMisses && name != "tpot-25ms":
			t.Errorf("%s: worst objective %s; injected misses ttft-1s %d, tpot-25ms %d", instance, name, ttftMisses, tpotMisses)
		case name == "ttft-1s" && cellFloat(f, "slo_attainment", i) > attainment+0.01:
			t.Errorf("%s: attainment at least %.4f, injected %.4f", instance, cellFloat(f, "slo_attainment", i), attainment)
		}
	}
}

// injectedGoodput is how many of an instance's requests that ended in (from, to] were served
// and met every fleet objective as the simulator injected them: finished without abort or
// error, TTFT within 1 s (and so 2 s), and a time per output token after the first within
// 25 ms (a request of one token has none to miss).
func injectedGoodput(res *sim.Result, instance string, from, to time.Time) (good, all int) {
	for _, sp := range res.Spans {
		if sp.Instance != instance || !sp.End.After(from) || sp.End.After(to) {
			continue
		}
		all++
		served := sp.FinishReason != "abort" && sp.FinishReason != "error"
		if served && sp.TTFT <= 1 && (sp.CompletionTokens <= 1 || sp.Decode/float64(sp.CompletionTokens-1) <= 0.025) {
			good++
		}
	}
	return good, all
}

// fleetGoodput: per instance, the requests the simulator says met every objective lie within
// the goodput series' bounds added up over the range (± 1% of the instance's requests); each
// model has a fleet series.
func fleetGoodput(t *testing.T, fs data.Frames, res *sim.Result, from, to time.Time) {
	instances, fleets := 0, 0
	for _, f := range fs {
		low, high := f.Fields[1], f.Fields[2]
		instance := low.Labels["instance"]
		if instance == slo.Fleet {
			fleets++
			continue
		}
		if f.Rows() < 2 {
			t.Fatalf("%s: %d steps of goodput", instance, f.Rows())
		}
		// Each point is the requests per second of the step ending at it: the steps after the
		// range's start.
		step := f.Fields[0].At(1).(time.Time).Sub(f.Fields[0].At(0).(time.Time)).Seconds()
		var sumLow, sumHigh float64
		for i := range f.Rows() {
			if l, h := low.At(i).(float64), high.At(i).(float64); !math.IsNaN(l) {
				sumLow, sumHigh = sumLow+l*step, sumHigh+h*step
			}
		}
		good, all := injectedGoodput(res, instance, from, to)
		t.Logf("goodput %s: injected %d of %d requests, answer [%.0f, %.0f]", instance, good, all, sumLow, sumHigh)
		tol := 0.01 * float64(all)
		if float64(good) < sumLow-tol || float64(good) > sumHigh+tol {
			t.Errorf("%s: %d requests met every objective, outside the answer [%.0f, %.0f] ± %.0f", instance, good, sumLow, sumHigh, tol)
		}
		instances++
	}
	if instances != fleetSize || fleets == 0 {
		t.Errorf("%d instance series and %d fleet series, want %d and at least one", instances, fleets, fleetSize)
	}
}

// findingsMisses: each finding's slo_misses says what the attribution gave it, objective by
// objective, and the finding of each faulty instance's fault says it caused misses.
func findingsMisses(t *testing.T, findings, attribution *data.Frame) {
	type finding struct {
		instance, rule string
		from, to       time.Time
	}
	misses := map[finding]string{}
	for i := range findings.Rows() {
		from, _ := findings.Fields[0].ConcreteAt(i)
		to, _ := findings.Fields[1].ConcreteAt(i)
		misses[finding{cellString(findings, "instance", i), cellString(findings, "rule", i), from.(time.Time), to.(time.Time)}] = cellString(findings, "slo_misses", i)
	}
	ruled := 0
	for i := range attribution.Rows() {
		rule := cellString(attribution, "rule", i)
		if rule == slo.NoFinding {
			continue
		}
		fromField, _ := attribution.FieldByName("from")
		toField, _ := attribution.FieldByName("to")
		start, end := fromField.At(i).(*time.Time), toField.At(i).(*time.Time)
		k := finding{cellString(attribution, "instance", i), rule, *start, *end}
		got, ok := misses[k]
		if !ok {
			t.Errorf("the attribution's %+v is no finding", k)
			continue
		}
		ruled++
		want := fmt.Sprintf("%s %.0f (%.0f%%)", cellString(attribution, "slo", i), cellFloat(attribution, "bad", i), 100*cellFloat(attribution, "share", i))
		if !strings.Contains(got, want) {
			t.Errorf("%s on %s: slo_misses %q does not say %q", rule, k.instance, got, want)
		}
	}
	caused := 0
	for instance, rule := range sim.FleetFaulty(fleetSize) {
		for k, m := range misses {
			if k.instance == instance && k.rule == rule && m != "" {
				caused++
				t.Logf("%s on %s: %s", rule, instance, m)
				break
			}
		}
	}
	if ruled == 0 || caused < 4 {
		t.Errorf("%d attribution rows of a finding, %d faulty instances whose fault's finding caused misses; want some, and at least 4", ruled, caused)
	}
}

// injectedAttainment is the share of an instance's requests whose TTFT, as the simulator
// injected it, is at most threshold, over the requests whose first token came in (from, to].
func injectedAttainment(res *sim.Result, instance string, threshold float64, from, to time.Time) (float64, int) {
	var good, all int
	for _, sp := range res.Spans {
		at := sp.Start.Add(time.Duration(sp.TTFT * float64(time.Second)))
		if sp.Instance != instance || !at.After(from) || at.After(to) {
			continue
		}
		all++
		if sp.TTFT <= threshold {
			good++
		}
	}
	return float64(good) / float64(all), all
}

func fleetAttainment(t *testing.T, f *data.Frame, res *sim.Result, from, to time.Time) {
	thresholds := map[string]float64{"ttft-1s": 1, "ttft-2s": 2}
	rows := 0
	for i := range f.Rows() {
		instance := cellString(f, "instance", i)
		if instance == slo.Fleet {
			continue
		}
		name := cellString(f, "slo", i)
		if _, ttft := thresholds[name]; !ttft {
			continue
		}
		want, n := injectedAttainment(res, instance, thresholds[name], from, to)
		low, high := cellFloat(f, "attainment_low", i), cellFloat(f, "attainment_high", i)
		t.Logf("%s %s: injected %.4f of %d, answer [%.4f, %.4f] (%s)", name, instance, want, n, low, high, cellString(f, "bounds", i))
		if !(want >= low-0.01 && want <= high+0.01) {
			t.Errorf("%s on %s: injected attainment %.4f (%d requests) outside the answer [%.4f, %.4f] ± 0.01", name, instance, want, n, low, high)
		}
		rows++
	}
	if rows != 2*fleetSize {
		t.Errorf("%d instance rows, want %d", rows, 2*fleetSize)
	}
}

// fleetAttribution: on each faulty instance, the objective its fault makes it miss most (the
// one with the most misses there) has the fault's rule first, with the largest share.
func fleetAttribution(t *testing.T, f *data.Frame) {
	type group struct{ slo, instance string }
	top, misses := map[group]string{}, map[group]float64{}
	for i := range f.Rows() {
		g := group{cellString(f, "slo", i), cellString(f, "instance", i)}
		t.Logf("%s %s: %s %.3f (%.0f misses)", g.slo, g.instance, cellString(f, "rule", i), cellFloat(f, "share", i), cellFloat(f, "bad", i))
		if _, seen := top[g]; !seen {
			top[g] = cellString(f, "rule", i) // rows come sorted by share
		}
		misses[g] += cellFloat(f, "bad", i)
	}
	checked := 0
	for instance, rule := range sim.FleetFaulty(fleetSize) {
		worst := group{}
		for g, n := range misses {
			if g.instance == instance && n > misses[worst] {
				worst = g
			}
		}
		if worst.instance == "" {
			t.Logf("%s (fault %s) missed none of the objectives", instance, rule)
			continue
		}
		checked++
		if top[worst] != rule {
			t.Errorf("%s on %s (fault %s): the largest share is %q's", worst.slo, instance, rule, top[worst])
		}
	}
	if checked < 4 {
		t.Errorf("%d faulty instances missed an objective, want at least 4", checked)
	}
}

func cellFloat(f *data.Frame, name string, row int) float64 {
	field, _ := f.FieldByName(name)
	if field == nil {
		return math.NaN()
	}
	v, ok := field.ConcreteAt(row)
	if !ok {
		return math.NaN()
	}
	switch x := v.(type) {
	case float64:
		return x
	}
	return math.NaN()
}
