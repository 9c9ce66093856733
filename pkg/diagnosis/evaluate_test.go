package diagnosis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// aborts builds a set whose only signal is abort_ratio, from runs of values: the simplest rule
// (client_timeouts: abort_ratio > 0.05 for 5m, i.e. 20 steps of 15 s) to test the state machine.
type run struct {
	n int
	v float64
}

func aborts(runs ...run) *series.Set {
	n := 0
	for _, r := range runs {
		n += r.n
	}
	set := newSet(n)
	at := 0
	for _, r := range runs {
		fill(set, keyA, series.AbortRatio, at, at+r.n, x(r.v))
		at += r.n
	}
	return set
}

const (
	bad  = 0.5
	good = 0.0
)

var gap = math.NaN()

func TestPendingFiresOnlyAfterFor(t *testing.T) {
	cases := []struct {
		name      string
		trueSteps int
		want      int
	}{
		{"true for 4m45s stays pending", 20, 0},
		{"true for exactly 5m fires", 21, 1},
		{"true for 10m fires", 41, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := aborts(run{5, good}, run{c.trueSteps, bad}, run{10, good})
			res := evaluate(t, set, Options{Rules: []string{ClientTimeouts}})
			got := findingsOf(res, ClientTimeouts)
			if len(got) != c.want {
				t.Fatalf("%d findings, want %d", len(got), c.want)
			}
			states := statesOf(t, res, keyA, ClientTimeouts)
			if c.want == 0 {
				if count(states, Firing) != 0 || count(states, Pending) != c.trueSteps {
					t.Fatalf("want %d pending steps and none firing, got %v", c.trueSteps, states)
				}
				return
			}
			f := got[0]
			if !f.Start.Equal(stepAt(5)) || !f.FiringAt.Equal(stepAt(25)) || !f.End.Equal(stepAt(5+c.trueSteps-1)) || f.Active {
				t.Fatalf("finding %v..%v firing at %v active %v; want start at the first true step, firing after 5m, end at the last true step",
					f.Start, f.End, f.FiringAt, f.Active)
			}
			if count(states, Pending) != 20 || count(states, Firing) != c.trueSteps-20 {
				t.Fatalf("states %v", states)
			}
		})
	}
}

func TestFlappingConditionNeverFires(t *testing.T) {
	var runs []run
	for range 30 {
		runs = append(runs, run{2, bad}, run{1, good})
	}
	res := evaluate(t, aborts(runs...), Options{Rules: []string{ClientTimeouts}})
	if got := findingsOf(res, ClientTimeouts); len(got) != 0 {
		t.Fatalf("flapping fired: %s", got[0].Text)
	}
	states := statesOf(t, res, keyA, ClientTimeouts)
	if count(states, Firing) != 0 || count(states, Pending) != 60 || count(states, OK) != 30 {
		t.Fatalf("states %v", states)
	}
}

func TestUnknownStepsNeitherFireNorClear(t *testing.T) {
	cases := []struct {
		name      string
		gapSteps  int
		findings  int
		wantStart int
	}{
		{"a gap of 5m inside a run keeps it", 20, 1, 0},
		{"a gap longer than for ends the run", 22, 1, 32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := aborts(run{10, bad}, run{c.gapSteps, gap}, run{30, bad})
			res := evaluate(t, set, Options{Rules: []string{ClientTimeouts}})
			got := findingsOf(res, ClientTimeouts)
			if len(got) != c.findings {
				t.Fatalf("%d findings, want %d", len(got), c.findings)
			}
			if !got[0].Start.Equal(stepAt(c.wantStart)) {
				t.Fatalf("finding starts %v, want %v", got[0].Start, stepAt(c.wantStart))
			}
			states := statesOf(t, res, keyA, ClientTimeouts)
			if count(states, InsufficientData) != c.gapSteps {
				t.Fatalf("gap steps shown as %v", states[10:10+c.gapSteps])
			}
		})
	}
	t.Run("a gap never completes a pending run", func(t *testing.T) {
		set := aborts(run{10, bad}, run{20, gap}, run{10, good})
		res := evaluate(t, set, Options{Rules: []string{ClientTimeouts}})
		if len(res.Findings) != 0 {
			t.Fatalf("fired across a gap: %s", res.Findings[0].Text)
		}
	})
}

// A vLLM restart: the rates have no sample at the restart step, then a two-step burst (a counter
// reset seen by a short window) while the fresh KV cache fills, then a healthy server.
func TestCounterResetProducesNoFinding(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, nil)
	for _, s := range []series.Signal{series.PreemptionRate, series.KVUsage, series.AbortRatio, series.PrefixCacheHitRate, series.SpecAcceptanceRate} {
		fill(set, keyA, s, 250, 251, nan())
	}
	fill(set, keyA, series.PreemptionRate, 251, 253, x(5))
	fill(set, keyA, series.KVUsage, 251, 253, x(0.95))
	fill(set, keyA, series.AbortRatio, 251, 253, x(0.5))
	fill(set, keyA, series.PreemptionRate, 253, totalSteps, x(0))
	fill(set, keyA, series.KVUsage, 253, totalSteps, x(0.1))

	res := evaluate(t, set, Options{EvalFrom: evalFrom})
	if len(res.Findings) != 0 {
		t.Fatalf("restart produced %s", res.Findings[0].Text)
	}
	if st := statesOf(t, res, keyA, KVCacheSaturated)[250-baseSteps]; st != InsufficientData {
		t.Fatalf("restart step is %s, want insufficient_data", st)
	}
}

func TestQuantileRulesNeedEnoughRequests(t *testing.T) {
	cases := []struct {
		name        string
		requests    float64
		minRequests int
		fires       bool
	}{
		{"19 requests are too few", 19, 0, false},
		{"20 requests are enough", 20, 0, true},
		{"a lower minimum admits fewer", 10, 10, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, map[series.Signal]sample{series.TTFTP99: qb(3, 2.5, 5), series.RequestCount: x(c.requests)})
			res := evaluate(t, set, Options{Rules: []string{PrefillBlocking}, MinRequests: c.minRequests, EvalFrom: evalFrom})
			if fired := len(res.Findings) == 1; fired != c.fires {
				t.Fatalf("fired %v, want %v", fired, c.fires)
			}
			if c.fires {
				return
			}
			if st := statesOf(t, res, keyA, PrefillBlocking); count(st, InsufficientData) != len(st) {
				t.Fatalf("states %v, want insufficient_data throughout", st)
			}
			if len(res.Notices) != 1 || !strings.Contains(res.Notices[0].Text(), "fewer than 20 requests") {
				t.Fatalf("notices %+v", res.Notices)
			}
		})
	}
}

func TestBaselineWithTooLittleDataIsInsufficient(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, map[series.Signal]sample{series.TTFTP99: qb(3, 2.5, 5), series.PrefillTimeMean: x(2)})
	fill(set, keyA, series.PrefillTimeMean, 0, 150, nan())
	res := evaluate(t, set, Options{Rules: []string{PrefillBound}, EvalFrom: evalFrom})
	if len(res.Findings) != 0 {
		t.Fatalf("fired on a thin baseline: %s", res.Findings[0].Text)
	}
	st := statesOf(t, res, keyA, PrefillBound)
	if st[0] != InsufficientData {
		t.Fatalf("first evaluated step is %s", st[0])
	}
	if len(res.Notices) == 0 || !strings.Contains(res.Notices[0].Text(), "prefill_time_mean data in the 1h before") {
		t.Fatalf("notices %+v", res.Notices)
	}
}

func TestRulesWithoutTheirSignalsAreNotApplicable(t *testing.T) {
	cases := []struct {
		name   string
		rule   string
		setup  func(*series.Set)
		reason string
	}{
		{"speculative decoding off", SpecDecodeInefficient, func(s *series.Set) {
			drop(s, keyA, series.SpecAcceptanceRate)
			s.Absent[series.SpecAcceptanceRate] = "speculative decoding is off"
		}, "speculative decoding is off"},
		{"old vLLM without the prefill histogram", TokenBudgetStarved, func(s *series.Set) {
			drop(s, keyA, series.PrefillTimeMean)
			s.Absent[series.PrefillTimeMean] = "vllm:request_prefill_time_seconds needs vLLM 0.8 or later"
		}, "needs vLLM 0.8"},
		{"prefix caching off", PrefixCacheMiss, func(s *series.Set) {
			s.CacheConfig[keyA.Instance] = vllm.CacheConfig{PrefixCachingKnown: true, BlockSize: 16}
		}, "prefix caching is off"},
		{"no cache_config_info", PrefixCacheMiss, func(s *series.Set) {
			delete(s.CacheConfig, keyA.Instance)
		}, "cache_config_info is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, map[series.Signal]sample{
				series.SpecAcceptanceRate: x(0.1), series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(0),
			})
			c.setup(set)
			res := evaluate(t, set, Options{Rules: []string{c.rule}, EvalFrom: evalFrom})
			if len(res.Findings) != 0 {
				t.Fatalf("finding %s", res.Findings[0].Text)
			}
			if st := statesOf(t, res, keyA, c.rule); count(st, NotApplicable) != len(st) {
				t.Fatalf("states %v", st)
			}
			if len(res.Notices) != 1 || res.Notices[0].State != NotApplicable || !strings.Contains(res.Notices[0].Text(), c.reason) {
				t.Fatalf("notices %+v", res.Notices)
			}
			for _, a := range res.Alerts {
				if sum(a.Values) != 0 {
					t.Fatalf("alert series of a rule that does not apply: %v", a.Values)
				}
			}
		})
	}
}

// drop removes k's sig from a set that scenario built: its signals are healthy()'s.
func drop(set *series.Set, k series.Key, sig series.Signal) {
	fresh := series.NewSet(set.Grid)
	for _, key := range set.Keys() {
		for s := range healthy() {
			if x := set.Get(key, s); x != nil && (key != k || s != sig) {
				fresh.Put(x)
			}
		}
	}
	fresh.Absent, fresh.CacheConfig = set.Absent, set.CacheConfig
	*set = *fresh
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// A healthy server with TTFT near 0.2 s shows an interpolated p99/p50 above 2 inside
// vLLM's coarse buckets; only bucket bounds that make the condition certain may fire.
func TestQuantileConditionsHoldOnlyWhenBucketBoundsMakeThemCertain(t *testing.T) {
	cases := []struct {
		name  string
		rule  string
		after map[series.Signal]sample
	}{
		{"p99/p50 interpolates to 2.25 within adjacent buckets", PrefillBlocking,
			map[series.Signal]sample{series.TTFTP50: qb(0.2, 0.1, 0.25), series.TTFTP99: qb(0.45, 0.25, 0.5), series.TTFTRatio: x(2.25)}},
		{"p99/p50 interpolates to 3.3 across adjacent buckets", PrefillBlocking,
			map[series.Signal]sample{series.TTFTP50: qb(0.15, 0.1, 0.25), series.TTFTP99: qb(0.49, 0.25, 0.5), series.TTFTRatio: x(3.3)}},
		{"p99 interpolates to 2.25× its baseline", PrefillBound,
			map[series.Signal]sample{series.TTFTP99: qb(0.9, 0.75, 1), series.PrefillTimeMean: x(1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, c.after)
			res := evaluate(t, set, Options{Rules: []string{c.rule}, EvalFrom: evalFrom})
			if len(res.Findings) != 0 {
				t.Fatalf("uncertain quantile fired: %s", res.Findings[0].Text)
			}
			if st := statesOf(t, res, keyA, c.rule); count(st, OK) != len(st) {
				t.Fatalf("states %v, want ok throughout (uncertain is not unknown)", st)
			}
		})
	}
}

func TestSymptomsBecomeSecondaryToASpecificCause(t *testing.T) {
	const n = 340
	set := newSet(n)
	scenario(set, keyA, nil)
	scenario(set, keyB, nil)
	// A: the KV cache saturates from step 240 and decode slows with it.
	fill(set, keyA, series.KVUsage, 240, n, x(0.97))
	fill(set, keyA, series.PreemptionRate, 240, n, x(2))
	fill(set, keyA, series.TPOTP99, 240, n, qb(0.12, 0.1, 0.15))
	fill(set, keyA, series.DecodeTimeMean, 240, n, x(3))
	// B: the KV cache saturates for 7 minutes, and decode slows only after it recovered.
	fill(set, keyB, series.KVUsage, 240, 268, x(0.97))
	fill(set, keyB, series.PreemptionRate, 240, 268, x(2))
	fill(set, keyB, series.TPOTP99, 290, n, qb(0.12, 0.1, 0.15))
	fill(set, keyB, series.DecodeTimeMean, 290, n, x(3))

	res := evaluate(t, set, Options{EvalFrom: evalFrom})
	decode := map[series.Key]Finding{}
	for _, f := range findingsOf(res, DecodeBound) {
		decode[f.Key] = f
	}
	if f := decode[keyA]; f.SecondaryTo != KVCacheSaturated || f.Severity != Info {
		t.Errorf("decode_bound during saturation: secondary to %q, severity %s; want kv_cache_saturated, info", f.SecondaryTo, f.Severity)
	}
	if f := decode[keyB]; f.SecondaryTo != "" || f.Severity != Warning {
		t.Errorf("decode_bound after saturation: secondary to %q, severity %s; want primary warning", f.SecondaryTo, f.Severity)
	}
	for _, f := range findingsOf(res, KVCacheSaturated) {
		if f.Severity != Critical || f.SecondaryTo != "" {
			t.Errorf("the cause itself changed: %s %q", f.Severity, f.SecondaryTo)
		}
	}
	for _, a := range res.Alerts {
		if a.Rule == DecodeBound && a.Key == keyA && a.Severity != Warning {
			t.Errorf("alert series severity follows linking: %s", a.Severity)
		}
	}
}

// Each symptom overlapping a cause that produces it on the same instance is linked to it.
func TestSymptomLinks(t *testing.T) {
	type m = map[series.Signal]sample
	saturated := m{series.KVUsage: x(0.97), series.PreemptionRate: x(2), series.Running: x(8), series.Waiting: x(4)}
	starvedSlow := starved(m{series.TTFTP50: qb(0.7, 0.6, 0.75), series.TTFTP99: qb(1.5, 1, 2.5)})
	cases := []struct {
		name           string
		after          m
		symptom, cause string
	}{
		{"a saturated cache's queue of preempted requests", saturated, PastTheKnee, KVCacheSaturated},
		{"prefills slowed by a starved token budget", starvedSlow, PrefillBound, TokenBudgetStarved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, c.after)
			res := evaluate(t, set, Options{EvalFrom: evalFrom})
			got := findingsOf(res, c.symptom)
			if len(got) != 1 || got[0].SecondaryTo != c.cause || got[0].Severity != Info {
				t.Fatalf("%s findings %+v, want one secondary to %s", c.symptom, got, c.cause)
			}
			if causes := findingsOf(res, c.cause); len(causes) != 1 || causes[0].SecondaryTo != "" {
				t.Fatalf("%s findings %+v, want one primary", c.cause, causes)
			}
		})
	}
}

func TestOneHeadlinePerInstanceByStatedOrder(t *testing.T) {
	set := newSet(totalSteps)
	// Both fire; client_timeouts is critical, but a queue with free cache is the likelier
	// bottleneck, since timeouts are a consequence.
	scenario(set, keyA, map[series.Signal]sample{series.AbortRatio: x(0.2), series.Waiting: x(4), series.KVUsage: x(0.4)})
	scenario(set, keyB, map[series.Signal]sample{series.AbortRatio: x(0.2)})
	res := evaluate(t, set, Options{EvalFrom: evalFrom})
	heads := map[string][]string{}
	for _, f := range res.Findings {
		if f.Headline {
			heads[f.Key.Instance] = append(heads[f.Key.Instance], f.Rule)
		}
	}
	want := map[string]string{keyA.Instance: QueueWithFreeCache, keyB.Instance: ClientTimeouts}
	for inst, rule := range want {
		if len(heads[inst]) != 1 || heads[inst][0] != rule {
			t.Errorf("%s headlines %v, want [%s]", inst, heads[inst], rule)
		}
	}
}

func TestAlertSeriesFollowTheConditionWithoutFor(t *testing.T) {
	set := aborts(run{5, good}, run{3, bad}, run{5, good})
	res := evaluate(t, set, Options{Rules: []string{ClientTimeouts}})
	if len(res.Findings) != 0 || len(res.Alerts) != 1 {
		t.Fatalf("%d findings, %d alert series", len(res.Findings), len(res.Alerts))
	}
	for i, v := range res.Alerts[0].Values {
		want := 0.0
		if i >= 5 && i < 8 {
			want = 1
		}
		if v != want {
			t.Fatalf("step %d: %v, want %v", i, v, want)
		}
	}
}

func TestSpecDecodeHasOneAlertSeriesPerSeverity(t *testing.T) {
	cases := []struct {
		acceptance        float64
		warning, critical float64
	}{
		{0.55, 1, 0},
		{0.45, 1, 1},
		{0.7, 0, 0},
	}
	for _, c := range cases {
		set := newSet(totalSteps)
		scenario(set, keyA, map[series.Signal]sample{series.SpecAcceptanceRate: x(c.acceptance)})
		res := evaluate(t, set, Options{Rules: []string{SpecDecodeInefficient}, EvalFrom: evalFrom})
		got := map[Severity]float64{}
		for _, a := range res.Alerts {
			got[a.Severity] = a.Values[len(a.Values)-1]
		}
		if len(res.Alerts) != 2 || got[Warning] != c.warning || got[Critical] != c.critical {
			t.Errorf("acceptance %v: alerts %v, want warning %v critical %v", c.acceptance, got, c.warning, c.critical)
		}
	}
}

func TestEvidenceShowsStartPeakAndEnd(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, map[series.Signal]sample{series.PreemptionRate: x(2.3)})
	for i, v := range []float64{0.9, 0.95, 0.99, 0.93} {
		fill(set, keyA, series.KVUsage, 250+7*i, 257+7*i, x(v))
	}
	fill(set, keyA, series.KVUsage, 240, 250, x(0.5))
	res := evaluate(t, set, Options{Rules: []string{KVCacheSaturated}, EvalFrom: evalFrom})
	if len(res.Findings) != 1 {
		t.Fatalf("%d findings", len(res.Findings))
	}
	f := res.Findings[0]
	kv := f.Evidence.Values[0]
	if kv.Signal != series.KVUsage || kv.Start.Value != 0.9 || kv.Peak.Value != 0.99 || kv.End.Value != 0.93 {
		t.Fatalf("kv evidence %+v", kv)
	}
	if !strings.Contains(f.Text, "from 10:02 to 10:09 UTC: usage 0.99, 2.3 preemptions/s. Cause: not enough KV blocks") {
		t.Fatalf("text %q", f.Text)
	}
	if f.Evidence.Requests[1] != 200 || len(f.Evidence.Thresholds) != 2 {
		t.Fatalf("evidence %s", f.Evidence)
	}
}

func TestConfidenceFollowsItsCriteria(t *testing.T) {
	cases := []struct {
		name  string
		kv    float64
		steps int
		want  string
	}{
		{"barely past the threshold, just long enough", 0.86, 13, "low"},
		{"well past the threshold, just long enough", 0.97, 13, "medium"},
		{"well past the threshold for three times `for`", 0.97, 37, "high"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, nil)
			fill(set, keyA, series.KVUsage, 240, 240+c.steps, x(c.kv))
			fill(set, keyA, series.PreemptionRate, 240, 240+c.steps, x(2))
			res := evaluate(t, set, Options{Rules: []string{KVCacheSaturated}, EvalFrom: evalFrom})
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings", len(res.Findings))
			}
			if got := res.Findings[0].Confidence; got.Level != c.want {
				t.Fatalf("confidence %s, want %s", got, c.want)
			}
		})
	}
}

func TestShortSharedPrefixIsReportedDistinctly(t *testing.T) {
	cases := []struct {
		name    string
		hit     float64
		prompt  float64
		variant string
	}{
		{"no block ever reused with long prompts", 0, 2000, "shared_prefix_shorter_than_block"},
		{"some blocks reused", 0.3, 2000, ""},
		{"prompts shorter than one block", 0, 10, "prompts_shorter_than_block"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, map[series.Signal]sample{
				series.TTFTP50: qb(0.8, 0.75, 1), series.PrefixCacheHitRate: x(c.hit), series.PromptLengthMean: x(c.prompt),
			})
			res := evaluate(t, set, Options{Rules: []string{PrefixCacheMiss}, EvalFrom: evalFrom})
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings", len(res.Findings))
			}
			f := res.Findings[0]
			if f.Variant != c.variant {
				t.Fatalf("variant %q, want %q", f.Variant, c.variant)
			}
			if c.variant == "shared_prefix_shorter_than_block" && !strings.Contains(f.Cause, "one KV block (16 tokens)") {
				t.Fatalf("cause %q does not name the block size", f.Cause)
			}
		})
	}
}

func TestOnlyTheEvaluatedRangeIsReported(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, nil)
	// One saturation ends before the range, one starts 2 minutes before it and goes on.
	fill(set, keyA, series.KVUsage, 100, 140, x(0.97))
	fill(set, keyA, series.PreemptionRate, 100, 140, x(2))
	fill(set, keyA, series.KVUsage, 232, totalSteps, x(0.97))
	fill(set, keyA, series.PreemptionRate, 232, totalSteps, x(2))
	res := evaluate(t, set, Options{Rules: []string{KVCacheSaturated}, EvalFrom: evalFrom})
	if len(res.Findings) != 1 || !res.Findings[0].Start.Equal(stepAt(232)) {
		t.Fatalf("findings %+v, want the one that began at %v", res.Findings, stepAt(232))
	}
	if res.Grid.Len != totalSteps-baseSteps || !res.Grid.Start.Equal(evalFrom) {
		t.Fatalf("grid %+v", res.Grid)
	}
	if st := statesOf(t, res, keyA, KVCacheSaturated); len(st) != res.Grid.Len || st[0] != Pending {
		t.Fatalf("timeline %v: want the pending state carried into the range", st[:2])
	}
	if len(res.Alerts[0].Values) != res.Grid.Len {
		t.Fatalf("alert series of %d steps", len(res.Alerts[0].Values))
	}
}

func TestLookbackCoversForAndBaselines(t *testing.T) {
	cases := []struct {
		opts Options
		want time.Duration
	}{
		{Options{Rules: []string{KVCacheSaturated}}, 3 * time.Minute},
		{Options{Rules: []string{KVCacheSaturated}, Thresholds: Thresholds{KVCacheSaturated: {"for": 600}}}, 10 * time.Minute},
		{Options{Rules: []string{KVCacheSaturated, PrefillBound}}, time.Hour + 5*time.Minute},
		{Options{Rules: []string{DecodeBound}, Baseline: 30 * time.Minute}, 35 * time.Minute},
	}
	for _, c := range cases {
		got, err := Lookback(c.opts)
		if err != nil || got != c.want {
			t.Errorf("Lookback(%v) = %v, %v; want %v", c.opts.Rules, got, err, c.want)
		}
	}
}

func TestRequiredSignalsCoverConditionsEvidenceAndRequestCount(t *testing.T) {
	got, err := RequiredSignals([]string{KVCacheSaturated, PrefillBlocking})
	if err != nil {
		t.Fatal(err)
	}
	has := map[series.Signal]bool{}
	for _, s := range got {
		has[s] = true
	}
	for _, s := range []series.Signal{series.KVUsage, series.PreemptionRate, series.Running, series.TTFTP50, series.TTFTP99, series.RequestCount} {
		if !has[s] {
			t.Errorf("missing %s in %v", s, got)
		}
	}
	if has[series.SpecAcceptanceRate] {
		t.Errorf("fetches signals of rules not asked for: %v", got)
	}
	if _, err := RequiredSignals([]string{"kv_saturated"}); err == nil || !strings.Contains(err.Error(), `did you mean "kv_cache_saturated"`) {
		t.Errorf("unknown rule id: %v", err)
	}
}

func TestFaultLongerThanHalfTheBaselineStaysOneFinding(t *testing.T) {
	// 50 minutes of a doubled TTFT: after 30 of them a baseline over the hour before each step
	// would be made of the fault. The run's steps are judged against the hour before it began.
	const faultSteps = 200
	set := newSet(baseSteps + faultSteps)
	scenario(set, keyA, map[series.Signal]sample{series.TTFTP99: qb(3, 2.5, 5), series.PrefillTimeMean: x(2)})
	fill(set, keyA, series.TTFTP99, baseSteps+faultSteps-20, baseSteps+faultSteps, healthy()[series.TTFTP99])
	res := evaluate(t, set, Options{Rules: []string{PrefillBound}, EvalFrom: evalFrom})
	got := findingsOf(res, PrefillBound)
	if len(got) != 1 {
		t.Fatalf("want one finding, got %d: %+v", len(got), got)
	}
	if want := stepAt(baseSteps + faultSteps - 21); !got[0].Start.Equal(evalFrom) || !got[0].End.Equal(want) {
		t.Fatalf("finding %s–%s, want %s–%s", got[0].Start, got[0].End, evalFrom, want)
	}
}

func TestStateNamesAreTheTimelineValues(t *testing.T) {
	for st, want := range map[State]string{
		OK: "ok", Pending: "pending", Firing: "firing", InsufficientData: "insufficient_data", NotApplicable: "not_applicable", NotApplicable + 1: "State(5)",
	} {
		if got := st.String(); got != want {
			t.Errorf("State %d is %q, want %q", uint8(st), got, want)
		}
	}
}

// A scrape gap and an idle instance are never a stall: the gap's steps are insufficient data,
// the idle instance's ok.
func TestEngineStalledTellsIdleAndScrapeGapsApart(t *testing.T) {
	type m = map[series.Signal]sample
	cases := []struct {
		name  string
		after m
		want  State
	}{
		{"idle", m{series.Running: x(0), series.Waiting: x(0), series.GenerationTPS: x(0), series.EngineStepRate: x(0)}, OK},
		{"scrape gap", m{series.Running: nan(), series.Waiting: nan(), series.GenerationTPS: nan(), series.EngineStepRate: nan()}, InsufficientData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, c.after)
			res := evaluate(t, set, Options{Rules: []string{EngineStalled}, EvalFrom: evalFrom})
			if got := findingsOf(res, EngineStalled); len(got) != 0 {
				t.Fatalf("want no finding, got %q", got[0].Text)
			}
			states := statesOf(t, res, keyA, EngineStalled)
			if n := count(states, c.want); n != len(states) {
				t.Errorf("%d of %d steps %s: %v", n, len(states), c.want, states)
			}
		})
	}
}

// A wedged engine's queue and its clients' aborts are the stall's: secondary to it, and the
// instance's headline is the stall.
func TestStallOutranksTheQueueAndTimeoutsItCauses(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, map[series.Signal]sample{
		series.Running: x(8), series.Waiting: x(40), series.KVUsage: x(0.3), series.AbortRatio: x(1),
		series.GenerationTPS: x(0), series.EngineStepRate: x(0),
	})
	res := evaluate(t, set, Options{EvalFrom: evalFrom})
	stall := findingsOf(res, EngineStalled)
	if len(stall) != 1 || stall[0].SecondaryTo != "" || !stall[0].Headline || stall[0].Severity != Critical {
		t.Fatalf("engine_stalled findings %+v, want one primary critical headline", stall)
	}
	for _, rule := range []string{QueueWithFreeCache, ClientTimeouts} {
		got := findingsOf(res, rule)
		if len(got) != 1 || got[0].SecondaryTo != EngineStalled || got[0].Severity != Info {
			t.Errorf("%s findings %+v, want one secondary to engine_stalled", rule, got)
		}
	}
}

// Where the instance exports no engine-step counter, no generated token over the window with
// requests held is the stall.
func TestEngineStalledWithoutTheStepCounter(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, stalled(nil))
	drop(set, keyA, series.EngineStepRate)
	res := evaluate(t, set, Options{Rules: []string{EngineStalled}, EvalFrom: evalFrom})
	if got := findingsOf(res, EngineStalled); len(got) != 1 {
		t.Fatalf("want one finding, got %d; states %v", len(got), statesOf(t, res, keyA, EngineStalled)[:3])
	}
}

// A workload whose answers always ran into their limit is not truncated anew: the length share
// must also reach baseline_factor (1.5) times the hour before's.
func TestOutputsTruncatedComparesWithItsBaseline(t *testing.T) {
	cases := []struct {
		name      string
		base, now float64
		want      int
	}{
		{"a quarter truncated before, 0.3 now", 0.25, 0.3, 0},
		{"a quarter truncated before, 0.375 now", 0.25, 0.375, 1},
		{"none truncated before, 0.3 now", 0, 0.3, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, nil)
			fill(set, keyA, series.LengthRatio, 0, baseSteps, x(c.base))
			fill(set, keyA, series.LengthRatio, baseSteps, totalSteps, x(c.now))
			res := evaluate(t, set, Options{Rules: []string{OutputsTruncated}, EvalFrom: evalFrom})
			if got := findingsOf(res, OutputsTruncated); len(got) != c.want {
				t.Fatalf("%d findings, want %d", len(got), c.want)
			}
		})
	}
}

// The same deferred queue reads as queue_deferred where vLLM splits the queue by reason, and as
// queue_with_free_cache where it does not (queue_deferred is then not applicable).
func TestDeferredQueueWithAndWithoutTheReasonSplit(t *testing.T) {
	queue := map[series.Signal]sample{series.Running: x(8), series.Waiting: x(6), series.KVUsage: x(0.3)}
	split := map[series.Signal]sample{series.WaitingDeferred: x(5), series.WaitingCapacity: x(1)}
	cases := []struct {
		name    string
		split   bool
		finding string
	}{
		{"with the reason split", true, QueueDeferred},
		{"without it", false, QueueWithFreeCache},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, queue)
			if c.split {
				for sig, s := range split {
					fill(set, keyA, sig, 0, totalSteps, x(0))
					fill(set, keyA, sig, baseSteps, totalSteps, s)
				}
			}
			res := evaluate(t, set, Options{Rules: []string{QueueDeferred, QueueWithFreeCache}, EvalFrom: evalFrom})
			if len(res.Findings) != 1 || res.Findings[0].Rule != c.finding {
				t.Fatalf("findings %+v, want one %s", res.Findings, c.finding)
			}
			if !c.split {
				if states := statesOf(t, res, keyA, QueueDeferred); count(states, NotApplicable) != len(states) {
					t.Errorf("queue_deferred without the split: %v, want not_applicable", states)
				}
			}
		})
	}
}
