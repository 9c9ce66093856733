package diagnosis

import (
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

func TestEvalStepIsFineEnoughForTheShortestFor(t *testing.T) {
	scrape := 15 * time.Second
	cases := []struct {
		name string
		opts Options
		step time.Duration
		span time.Duration
		want time.Duration
	}{
		{"a panel step within half the shortest for", Options{}, 45 * time.Second, 2 * time.Hour, 45 * time.Second},
		{"a 1 min panel step halved for engine_stalled's 90 s for", Options{}, time.Minute, 2 * time.Hour, 30 * time.Second},
		{"10 min with a 90 s for (engine_stalled): 600 s in 14 parts", Options{}, 10 * time.Minute, 2 * time.Hour, 42 * time.Second},
		{"10 min with a 3 min for: 600 s in 7 parts", Options{Rules: []string{KVCacheSaturated, PrefillBlocking}}, 10 * time.Minute, 2 * time.Hour, 85 * time.Second},
		{"10 min, rules with a 5 min for only: 4 parts", Options{Rules: []string{PrefillBlocking}}, 10 * time.Minute, 2 * time.Hour, 150 * time.Second},
		{"never finer than the scrape interval", Options{Thresholds: Thresholds{KVCacheSaturated: {"for": 10}}}, time.Minute, 2 * time.Hour, scrape},
		{"never more than MaxEvalPoints steps over the range", Options{}, 10 * time.Minute, 7 * 24 * time.Hour, 303 * time.Second},
		{"a budget coarser than the panel keeps the panel's step", Options{}, 10 * time.Minute, 30 * 24 * time.Hour, 10 * time.Minute},
	}
	for _, c := range cases {
		got, err := EvalStep(c.opts, c.step, scrape, c.span)
		if err != nil || got != c.want {
			t.Errorf("%s: EvalStep = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := EvalStep(Options{Rules: []string{"no_such_rule"}}, time.Minute, scrape, time.Hour); err == nil {
		t.Error("an unknown rule id should be an error")
	}
}

// A 12-minute saturation evaluated at 75 s and reported at 10 min: it fires (at a 10-minute
// step it would fill one step), the finding keeps the evaluation's resolution, and the report
// grid's points show the most telling state of the steps they stand for.
func TestReportFoldsEvaluatedStepsOntoThePanelStep(t *testing.T) {
	eval, panel := 75*time.Second, 10*time.Minute
	n := 96 // two hours
	set := series.NewSet(series.Grid{Start: t0, Step: eval, Len: n})
	for sig, s := range healthy() {
		fill(set, keyA, sig, 0, n, s)
	}
	cacheOn(set, keyA)
	// Steps 48..57 (60 min to 71:15) saturated.
	fill(set, keyA, series.KVUsage, 48, 58, x(0.97))
	fill(set, keyA, series.PreemptionRate, 48, 58, x(2))
	report := series.NewGrid(t0, t0.Add(110*time.Minute), panel)
	res := evaluate(t, set, Options{Rules: []string{KVCacheSaturated}, EvalFrom: t0, Report: report})
	if len(res.Findings) != 1 || !res.Findings[0].Start.Equal(t0.Add(60*time.Minute)) || !res.Findings[0].End.Equal(t0.Add(71*time.Minute+15*time.Second)) {
		t.Fatalf("findings %+v, want one from 60 min to 71:15", res.Findings)
	}
	if res.Grid != report {
		t.Fatalf("result grid %+v, want the report grid %+v", res.Grid, report)
	}
	// Point 6 (60 min) holds steps 41..48: one pending step; point 7 (70 min) holds 49..56,
	// firing from step 51 (3 min after 48); point 8 (80 min) holds 57..64: firing at 57.
	want := map[int]State{5: OK, 6: Pending, 7: Firing, 8: Firing, 9: OK}
	st := statesOf(t, res, keyA, KVCacheSaturated)
	if len(st) != report.Len {
		t.Fatalf("%d states, want %d", len(st), report.Len)
	}
	for p, w := range want {
		if st[p] != w {
			t.Errorf("point %d: %s, want %s", p, st[p], w)
		}
	}
	alert := res.Alerts[0].Values
	for p, w := range map[int]float64{5: 0, 6: 1, 7: 1, 8: 1, 9: 0} {
		if alert[p] != w {
			t.Errorf("alert at point %d: %v, want %v", p, alert[p], w)
		}
	}
}

// A symptom explained by a cause that is itself secondary names the primary cause at the end
// of the chain.
func TestSecondaryNamesThePrimaryCauseAtTheEndOfTheChain(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	decode := &Finding{Rule: DecodeBound, Key: keyA, Start: at(0), End: at(40), Severity: Warning}
	budget := &Finding{Rule: TokenBudgetStarved, Key: keyA, Start: at(5), End: at(20), Severity: Warning}
	prefill := &Finding{Rule: PrefillBound, Key: keyA, Start: at(5), End: at(40), Severity: Warning}
	got := map[string]string{}
	for _, f := range settle([]*Finding{prefill, budget, decode}) {
		got[f.Rule] = f.SecondaryTo
	}
	want := map[string]string{DecodeBound: "", TokenBudgetStarved: DecodeBound, PrefillBound: DecodeBound}
	for rule, w := range want {
		if got[rule] != w {
			t.Errorf("%s secondary to %q, want %q", rule, got[rule], w)
		}
	}
}
