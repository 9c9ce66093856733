package diagnosis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// checkRec compares a recommendation with the expected value (NaN: none), and checks that the
// texts name what they must.
func checkRec(t *testing.T, got Recommendation, want float64, contains ...string) {
	t.Helper()
	switch {
	case math.IsNaN(want):
		if got.Known() || got.Missing == "" && got.Instead == "" {
			t.Errorf("got %q, want no value and a reason", got)
		}
	case !got.Known() || math.Abs(got.Value-want) > 1e-9:
		t.Errorf("value %v (%q), want %v", got.Value, got, want)
	}
	for _, c := range contains {
		if !strings.Contains(got.String(), c) {
			t.Errorf("%q lacks %q", got, c)
		}
	}
}

func TestKVFit(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		in       KVInput
		want     float64
		contains []string
	}{
		// pool 4000 × 16 = 64000 tokens; 0.5 / 24 = 0.02083 of it (1333 tokens) per request;
		// 0.9 / 0.02083 = 43.2 → 43; fp8: 0.9 × 2 / 0.02083 = 86.4 → 86.
		{"from KV usage per running request", KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "auto", Usage: 0.5, Running: 24, PromptMean: 1000, OutputMean: 600, Current: AtLeast(60), Source: "the most running"},
			43, []string{"lower --max-num-seqs from at least 60 to 43", "(1333 tokens)", "prompt 1000 + output 600 / 2 = 1300", "--kv-cache-dtype fp8", "128000 tokens, fitting 86"}},
		// No running requests: prompt 1000 + output 600 / 2 = 1300 tokens of 64000 = 0.02031;
		// 0.9 / 0.02031 = 44.3 → 44.
		{"from the lengths without running requests", KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "auto", Usage: 0, Running: 0, PromptMean: 1000, OutputMean: 600, Current: Unknown()},
			44, []string{"no KV usage per running request: prompt 1000 + output 600 / 2 = 1300 tokens"}},
		// Already fp8: 0.9 × 64000 / 1333.3 = 43, and no fp8 alternative.
		{"fp8 already", KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "fp8", Usage: 0.5, Running: 24, PromptMean: nan, OutputMean: nan, Current: Exact(128)}, 43, []string{"from 128 to 43"}},
		// 100 × 16 = 1600 tokens, 0.9 × 1600 / 5000 = 0.29: at least one sequence.
		{"at least one sequence", KVInput{Blocks: 100, BlockSize: 16, CacheDType: "auto", Usage: 1, Running: 0.32, PromptMean: nan, OutputMean: nan, Current: AtLeast(2)}, 1, nil},
		// Unknown current: the value is a target, never "lower to".
		{"current unknown: a target", KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "fp8", Usage: 0.5, Running: 24, PromptMean: nan, OutputMean: nan, Current: Unknown(), Source: "no running"},
			43, []string{"set --max-num-seqs to 43 as a target (its current value is unknown: no running)"}},
		// 43 fit, but never more than 30 ran: lowering to 43 would limit nothing that ran.
		{"fit above what ran: no change", KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "auto", Usage: 0.5, Running: 24, PromptMean: nan, OutputMean: nan, Current: AtLeast(30), Source: "the most running"},
			nan, []string{"no change", "does not bind", "--max-model-len", "computed 43"}},
		// The measured share needs no pool: 0.9 / (0.5 / 24) = 43.2 → 43, the pool said unknown.
		{"no cache config, measured share", KVInput{Usage: 0.5, Running: 24, PromptMean: 1000, OutputMean: 600, Current: AtLeast(50)}, 43, []string{"pool unknown"}},
		{"no cache config, lengths only", KVInput{Usage: nan, Running: nan, PromptMean: 1000, OutputMean: 600}, nan, []string{"vllm:cache_config_info"}},
		{"no usage, running or lengths", KVInput{Blocks: 4000, BlockSize: 16, Usage: nan, Running: nan, PromptMean: nan, OutputMean: nan}, nan, []string{"vllm:request_prompt_tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KVFit(tt.in)
			checkRec(t, got, tt.want, tt.contains...)
			if tt.in.CacheDType == "fp8" && strings.Contains(got.Effect, "--kv-cache-dtype") {
				t.Errorf("fp8 cache offered fp8 again: %q", got.Effect)
			}
		})
	}
}

func TestSpecDraft(t *testing.T) {
	tests := []struct {
		name     string
		in       SpecInput
		want     float64
		contains []string
	}{
		// Break-even 0.6. p = 0.7, k = 3: accepted 0.7 + 0.49 + 0.343 = 1.533, α = 0.511;
		// k'=1 1.7/1.6 = 1.062; k'=2 2.19/2.2 = 0.9955; k'=3 2.533/2.8 = 0.9046.
		{"shorten", SpecInput{Acceptance: 1.533 / 3, DraftLength: 3, BreakEven: 0.6}, 1,
			[]string{"acceptance 0.7 per position", "0.9046 now", "1.062 at k = 1", "lower --speculative-config num_speculative_tokens from 3 to 1", "shorten the draft from 3 to 1"}},
		// The scenario's drafter: p = 0.35, k = 3 (α 0.172): k'=1 1.35/1.6 = 0.84, below 1.
		{"disable", SpecInput{Acceptance: 0.515375 / 3, DraftLength: 3, BreakEven: 0.6, Running: 63.6}, 0,
			[]string{"from 3 to 0", "disable speculative decoding", "disable_by_batch_size, a value below the 64 sequences"}},
		// p = 0.95, k = 3: accepted 2.7099, α 0.903, above break-even: k'=3 3.71/2.8 = 1.325 is best,
		// so the draft pays and there is nothing to lower.
		{"pays: no change", SpecInput{Acceptance: 2.709875 / 3, DraftLength: 3, BreakEven: 0.6}, math.NaN(), []string{"no change", "breaks even", "computed 3"}},
		{"no acceptance", SpecInput{Acceptance: math.NaN(), DraftLength: 3, BreakEven: 0.6}, math.NaN(), []string{"accepted_tokens"}},
		{"no draft length", SpecInput{Acceptance: 0.3, DraftLength: math.NaN(), BreakEven: 0.6}, math.NaN(), []string{"num_drafts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRec(t, SpecDraft(tt.in), tt.want, tt.contains...) })
	}
}

// line is n points of TPOT = base + perSeq × running, running from lo to hi.
func line(base, perSeq, lo, hi float64, n int) (running, tpot []float64) {
	for i := range n {
		r := lo + (hi-lo)*float64(i)/float64(n-1)
		running, tpot = append(running, r), append(tpot, base+perSeq*r)
	}
	return running, tpot
}

func TestFitTPOT(t *testing.T) {
	tests := []struct {
		name         string
		running      []float64
		tpot         []float64
		points       int
		base, perSeq float64
	}{
		{"a line is found again", nil, nil, 20, 0.012, 0.0005},
		{"too few steps", nil, nil, 0, 0, 0},
		{"one batch size says nothing of others", []float64{10, 10, 10, 10, 11, 11, 11, 11, 12, 12}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 0, 0},
	}
	tests[0].running, tests[0].tpot = line(0.012, 0.0005, 4, 60, 20)
	tests[1].running, tests[1].tpot = line(0.012, 0.0005, 4, 60, minFitPoints-1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FitTPOT(tt.running, tt.tpot)
			if got.Points != tt.points || math.Abs(got.Base-tt.base) > 1e-9 || math.Abs(got.PerSeq-tt.perSeq) > 1e-9 {
				t.Errorf("fit %+v, want %d points, base %v, per sequence %v", got, tt.points, tt.base, tt.perSeq)
			}
		})
	}
}

// Speculation judged by its measured effect: against peers without it, a draft that pays at
// small batches and costs at large ones is kept below the batch where the two cross; measured
// costs or gains at every batch leave the advice to the acceptance model.
func TestSpecDraftByBatch(t *testing.T) {
	fit := func(base, perSeq, lo, hi float64) TPOTByBatch { return FitTPOT(line(base, perSeq, lo, hi, 30)) }
	// Peers: 13 ms + 0.54 ms per sequence. Here: 10 ms + 0.64 ms: equal at 3 / 0.1 = 30.
	peers := fit(0.013, 0.00054, 4, 40)
	disable := SpecInput{Acceptance: 0.515375 / 3, DraftLength: 3, BreakEven: 0.6, Running: 20}
	tests := []struct {
		name     string
		measured TPOTByBatch
		peers    TPOTByBatch
		want     float64
		contains []string
	}{
		{"pays below 30, costs above", fit(0.010, 0.00064, 4, 60), peers, 30,
			[]string{"set --speculative-config disable_by_batch_size to 30 as a target", "pays below 30 running sequences", "equal at 30 running"}},
		{"costs at every batch seen", fit(0.010, 0.00064, 40, 60), peers, 0, []string{"num_speculative_tokens from 3 to 0"}},
		{"pays at every batch seen", fit(0.010, 0.00064, 4, 25), peers, 0, []string{"num_speculative_tokens from 3 to 0"}},
		{"no peers without speculation", fit(0.010, 0.00064, 4, 60), TPOTByBatch{}, 0, []string{"num_speculative_tokens from 3 to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := disable
			in.Measured, in.Peers = tt.measured, tt.peers
			checkRec(t, SpecDraft(in), tt.want, tt.contains...)
		})
	}
}

// The rule and its advice use one model: below the break-even acceptance (where the rule
// fires) the current draft never pays, so the advice always shortens it or disables it.
func TestSpecDraftNeverKeepsAFiringDraft(t *testing.T) {
	for k := 1; k <= 8; k++ {
		for a := 0.0; a < 0.6; a += 0.01 {
			r := SpecDraft(SpecInput{Acceptance: a, DraftLength: float64(k), BreakEven: 0.6})
			if !r.Known() || r.Value >= float64(k) || r.Change != Lower {
				t.Errorf("α %.2f k %d: %q, want a shorter draft or none", a, k, r)
			}
		}
	}
}

func TestBatchedTokens(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		in       BudgetInput
		want     float64
		contains []string
	}{
		// 4 req/s over 70 steps/s = 0.06 → 1 prefill per step: 32 decodes + 1 × 1950 = 1982.
		// Running sits at 32 with usage 0.125: 0.9 × 32 / 0.125 = 230.4 → --max-num-seqs 230.
		{"one prefill per step, running at its ceiling", BudgetInput{PromptP95: 1950, PromptP95Lower: 1000, PromptP95Upper: 2000,
			Running: 32, RunningMax: 32, AtCeiling: true, Usage: 0.125, RequestRate: 4, StepRate: 70, Current: Between(16, 32), Source: "steps"},
			1982, []string{"raise --max-num-batched-tokens from in (16, 32] to 1982", "(1000, 2000]", "--max-num-seqs 230"}},
		// 100 req/s over 40 steps/s = 2.5 → 3 per step: ⌈10.4⌉ = 11 decodes + 3 × 500 = 1511.
		{"several prefills per step", BudgetInput{PromptP95: 500, PromptP95Lower: nan, PromptP95Upper: nan, Running: 10.4, RunningMax: 12, Usage: 0.2, RequestRate: 100, StepRate: 40, Current: Between(256, 512)},
			1511, []string{"3 prefills per step", "from in (256, 512] to 1511"}},
		// The budget is within the bucket steps reached: the value is a target.
		{"value within the bucket reached", BudgetInput{PromptP95: 1500, PromptP95Lower: nan, PromptP95Upper: nan, Running: 10, RunningMax: 12, Usage: 0.2, RequestRate: 1, StepRate: 40, Current: Between(1024, 2048), Source: "steps"},
			1510, []string{"set --max-num-batched-tokens to 1510 as a target (its current value is in (1024, 2048]: steps)"}},
		// Steps already take (2048, 4096] tokens, above the 1510 needed: the budget does not
		// starve prefills; running sits at 12 with usage 0.2, so --max-num-seqs is what binds.
		{"budget already above the value", BudgetInput{PromptP95: 1500, PromptP95Lower: nan, PromptP95Upper: nan, Running: 10, RunningMax: 12, AtCeiling: true, Usage: 0.2, RequestRate: 1, StepRate: 40, Current: Between(2048, 4096), Source: "steps"},
			nan, []string{"no change", "does not hold prefills back", "raise --max-num-seqs to 54", "computed 1510"}},
		// Without the step rate: 1 per step, 0 + 1 × 800 = 800 (running unknown counts 0).
		{"no step rate", BudgetInput{PromptP95: 799.5, PromptP95Lower: nan, PromptP95Upper: nan, Running: nan, RunningMax: nan, Usage: nan, RequestRate: 4, StepRate: nan, Current: Unknown()},
			800, []string{"vllm:iteration_tokens_total"}},
		{"no prompt p95", BudgetInput{PromptP95: nan, Running: 3, RequestRate: 4, StepRate: 50}, nan, []string{"vllm:request_prompt_tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BatchedTokens(tt.in)
			checkRec(t, got, tt.want, tt.contains...)
			if !tt.in.AtCeiling && strings.Contains(got.Effect, "--max-num-seqs") {
				t.Errorf("running below its ceiling, yet %q", got.Effect)
			}
		})
	}
}

func TestInstancesNeeded(t *testing.T) {
	tests := []struct {
		name     string
		in       KneeInput
		want     float64
		contains []string
	}{
		// 6/s finished + 3/s queue growth = 9/s arrivals; ⌈9 / 4⌉ = 3 instances, 2 more.
		{"add two", KneeInput{Finished: 6, QueueGrowth: 3, Held: 4, HeldWhere: "this instance", PromptTPS: 12345.4}, 3,
			[]string{"= 9/s", "raise instances serving this traffic from 1 to 3", "add 2 instance", "--max-num-queued-tokens ≈ your TTFT objective in seconds × 12345 prompt tokens/s"}},
		// With the settings' TTFT objective of 1.5 s: 1.5 × 12345.4 = 18518 queued tokens.
		{"admission sized by the TTFT objective", KneeInput{Finished: 6, QueueGrowth: 3, Held: 4, HeldWhere: "this instance", PromptTPS: 12345.4,
			TTFT: TTFTObjective{Name: "ttft-1.5s", Seconds: 1.5}}, 3,
			[]string{"--max-num-queued-tokens 18518 (objective ttft-1.5s's 1.5 s × 12345 prompt tokens/s"}},
		// 3/s, no queue growth known: ⌈3 / 4⌉ = 1, yet the finding holds: one more, never 0.
		{"at least one more", KneeInput{Finished: 3, QueueGrowth: math.NaN(), Held: 4}, 2, []string{"⌈3 / 4⌉ = 1, at least 2 while the queue grows", "add 1 instance"}},
		{"no healthy step in the range", KneeInput{Finished: 6, QueueGrowth: 3, Held: 0}, math.NaN(), []string{"widen the range"}},
		{"no request rate", KneeInput{Finished: math.NaN(), Held: 4}, math.NaN(), []string{"vllm:request_success_total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRec(t, InstancesNeeded(tt.in), tt.want, tt.contains...) })
	}
}

func TestPrefixReuse(t *testing.T) {
	tests := []struct {
		name     string
		in       PrefixInput
		want     float64
		contains []string
	}{
		// (0.97 − 0) × 7200 = 6984 tokens missed; 0.5 s over 7200 computed tokens: 6984 × 0.5 /
		// 7200 = 0.485 s; 6984 cached tokens = 436 blocks of 16.
		{"priced misses", PrefixInput{HitNow: 0, HitExpected: 0.97, Source: "in the hour before", PromptMean: 7200, PrefillMean: 0.5, BlockSize: 16},
			0.97, []string{"6984 tokens missed", "485 ms", "436 KV blocks of 16"}},
		// 0.01 × 1000 = 10 cached tokens, fewer than one block of 16.
		{"shared prefix shorter than a block", PrefixInput{HitNow: 0, HitExpected: 0.01, Source: "on 2 healthy peers of the model", PromptMean: 1000, PrefillMean: 0.1, BlockSize: 16},
			0.01, []string{"shorter than one KV block (16)"}},
		// No prefill time: the missed tokens without a price.
		{"no prefill time", PrefixInput{HitNow: 0.1, HitExpected: 0.6, Source: "in the hour before", PromptMean: 1000, PrefillMean: math.NaN()},
			0.6, []string{"500 tokens missed", "no prefill time"}},
		{"nothing to expect", PrefixInput{HitNow: 0, HitExpected: math.NaN(), PromptMean: 1000}, math.NaN(), []string{"healthy peer"}},
		{"no hit rate now", PrefixInput{HitNow: math.NaN(), HitExpected: 0.9, PromptMean: 1000}, math.NaN(), []string{"vllm:prefix_cache_hits_total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRec(t, PrefixReuse(tt.in), tt.want, tt.contains...) })
	}
}

// TestFindingsCarryTheirRecommendation evaluates rules over series and checks that each finding
// carries the value its window implies.
func TestFindingsCarryTheirRecommendation(t *testing.T) {
	tests := []struct {
		name  string
		rule  string
		after map[series.Signal]sample
		want  float64
	}{
		// Pool 4000 × 16 = 64000 tokens (cacheOn); usage 0.96 × 64000 / 50 running = 1228.8 tokens
		// per request; 0.9 × 64000 / 1228.8 = 46.875 → 46.
		{"kv_cache_saturated", KVCacheSaturated, map[series.Signal]sample{series.KVUsage: x(0.96), series.PreemptionRate: x(2), series.Running: x(50)},
			46},
		// preemptions_free_cache reads the window mean: 0.6 × 64000 / 30 = 1280 tokens per request;
		// 0.9 × 64000 / 1280 = 45, above the 30 that ever ran: lowering the flag to 45 would
		// limit nothing, so no value (the advice names --max-model-len instead).
		{"preemptions_free_cache", PreemptionsFreeCache, map[series.Signal]sample{series.KVUsageAvg: x(0.6), series.PreemptionRate: x(0.1), series.Running: x(30)}, math.NaN()},
		// α 0.4 at k 2: accepted 0.8 = p + p², p = 0.5247; at break-even 0.6, k'=1 1.525/1.6 =
		// 0.953 and k'=2 1.8/2.2 = 0.818, both below 1: disable (0).
		{"spec_decode_inefficient", SpecDecodeInefficient, map[series.Signal]sample{series.SpecAcceptanceRate: x(0.4), series.SpecDraftLength: x(2)}, 0},
		// 16 running + 1 × 1900 (5 req/s over 50 steps/s: 1 per step) = 1916.
		{"queue_with_free_cache", QueueWithFreeCache, map[series.Signal]sample{series.Running: x(16), series.Waiting: x(40), series.KVUsage: x(0.2),
			series.PromptLengthP95: qb(1900, 1000, 2000), series.EngineStepRate: x(50)}, 1916},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, tt.after)
			res := evaluate(t, set, Options{Rules: []string{tt.rule}, EvalFrom: evalFrom})
			fs := findingsOf(res, tt.rule)
			if len(fs) != 1 {
				t.Fatalf("%d findings of %s, want 1", len(fs), tt.rule)
			}
			checkRec(t, fs[0].Recommendation, tt.want)
		})
	}
}

// TestPastTheKneeReadsTheRateHeldBeforeTheQueue: the healthy hour held 5 req/s with no queue
// (healthy()); during the knee 6 req/s finish while the queue grows from 20 to 150 over the 40
// steps (39 × 15 s = 585 s): 6 + 130/585 = 6.222/s; ⌈6.222 / 5⌉ = 2 instances, 1 more.
func TestPastTheKneeReadsTheRateHeldBeforeTheQueue(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, map[series.Signal]sample{series.Running: x(64), series.KVUsage: x(0.9), series.RequestRate: x(6)})
	for i := baseSteps; i < totalSteps; i++ {
		fill(set, keyA, series.Waiting, i, i+1, x(20+130*float64(i-baseSteps)/39))
	}
	res := evaluate(t, set, Options{Rules: []string{PastTheKnee}, EvalFrom: evalFrom})
	fs := findingsOf(res, PastTheKnee)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1", len(fs))
	}
	checkRec(t, fs[0].Recommendation, 2, "one instance held 5/s", "0.2222/s queue growth")
}

// TestPrefixMissExpectsTheHitRateOfHealthyPeers: the hour before had the same low hit rate, so
// the peer serving the same model (0.8) is what to expect; the peer of another model is not.
func TestPrefixMissExpectsTheHitRateOfHealthyPeers(t *testing.T) {
	set := newSet(totalSteps)
	miss := map[series.Signal]sample{series.PrefixCacheHitRate: x(0.1), series.TTFTP50: qb(0.6, 0.5, 0.75)}
	scenario(set, keyA, nil)
	for sig, s := range miss {
		fill(set, keyA, sig, 0, totalSteps, s)
	}
	scenario(set, keyB, nil)
	other := series.Key{Instance: "10.0.0.3:8000", Model: "qwen"}
	scenario(set, other, map[series.Signal]sample{series.PrefixCacheHitRate: x(0.95)})
	res := evaluate(t, set, Options{Rules: []string{PrefixCacheMiss}, EvalFrom: evalFrom})
	var got *Finding
	for i, f := range res.Findings {
		if f.Key == keyA {
			got = &res.Findings[i]
		}
	}
	if got == nil {
		t.Fatalf("no prefix_cache_miss on %v: %v", keyA, res.Findings)
	}
	// (0.8 − 0.1) × 1000 = 700 tokens missed; 0.5 s over 900 computed tokens: 700 × 0.5 / 900 = 389 ms.
	checkRec(t, got.Recommendation, 0.8, "on 1 healthy peers", "700 tokens missed", "389 ms")
}

// TestPastTheKneeMeasuresArrivalsUpToTheQueuesPeak: the queue grows from 20 to 150 over steps
// 240..259 (19 × 15 s = 285 s) and drains to 60 by the end; with 9.8 req/s finishing, arrivals
// are 9.8 + 130/285 = 10.256/s, ⌈10.256 / 5⌉ = 3 instances, 2 more. Over the whole finding the
// queue grew by only 40, which would understate arrivals (9.87/s, 1 more).
func TestPastTheKneeMeasuresArrivalsUpToTheQueuesPeak(t *testing.T) {
	set := newSet(totalSteps)
	scenario(set, keyA, map[series.Signal]sample{series.Running: x(64), series.KVUsage: x(0.9), series.RequestRate: x(9.8)})
	for i := baseSteps; i < totalSteps; i++ {
		w := 20 + 130*float64(i-baseSteps)/19
		if i > baseSteps+19 {
			w = 150 - 90*float64(i-baseSteps-19)/20
		}
		fill(set, keyA, series.Waiting, i, i+1, x(w))
	}
	res := evaluate(t, set, Options{Rules: []string{PastTheKnee}, EvalFrom: evalFrom})
	fs := findingsOf(res, PastTheKnee)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1", len(fs))
	}
	checkRec(t, fs[0].Recommendation, 3, "0.4561/s queue growth", "= 3", "add 2 instance")
}

// tokensPerStep is a tokens-per-step histogram whose steps fall in the bucket of vLLM's layout
// that ends at hi, 40 steps a second, except the last `tail` grid steps, which reach 2048.
func tokensPerStep(n int, hi float64, tail int) *series.Histogram {
	uppers := append(slices.Clone(vllm.IterationTokenBuckets), math.Inf(1))
	h := &series.Histogram{Uppers: uppers, Rates: make([][]float64, len(uppers))}
	for j, u := range uppers {
		h.Rates[j] = make([]float64, n)
		for i := range n {
			if u >= hi && i < n-tail || u >= 2048 {
				h.Rates[j][i] = 40
			}
		}
	}
	return h
}

// The budget's current value is the bucket of tokens per step the window reached, and the
// advice raises it from there; where running sat at its ceiling with steps carrying more than
// its decodes, the sequence cap limited the steps, and the bucket only bounds the budget from
// below.
func TestBudgetAdviceReadsTheStepsBucket(t *testing.T) {
	tests := []struct {
		name    string
		running float64
		stepTop float64
		tail    int
		want    []string
	}{
		// Steps of (16, 32] tokens carry no more than the 32 running decodes: the budget holds
		// them. 32 running + 1 × 1900 = 1932, above the bucket.
		{"steps fill the budget", 32, 32, 0, []string{"raise --max-num-batched-tokens from in (16, 32] to 1932", "the largest bucket of vllm:iteration_tokens_total"}},
		// Running sits at 8 (its ceiling: it never moves) while steps carry (256, 512]: 1908
		// is a target above a budget of at least 256.
		{"running at its ceiling", 8, 512, 0, []string{"set --max-num-batched-tokens to 1908 as a target (its current value is at least 256", "running sat at its ceiling of 8"}},
		// A redeploy back to a budget of 2048 drains the queue in the finding's last 5 steps:
		// the window's median step still reads (16, 32].
		{"a drain at the window's edge", 32, 32, 5, []string{"raise --max-num-batched-tokens from in (16, 32] to 1932"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(totalSteps)
			scenario(set, keyA, map[series.Signal]sample{series.Running: x(tt.running), series.Waiting: x(40), series.KVUsage: x(0.2),
				series.PromptLengthP95: qb(1900, 1000, 2000), series.EngineStepRate: x(50)})
			set.PutHistogram(vllm.IterationTokens, keyA, tokensPerStep(totalSteps, tt.stepTop, tt.tail))
			fs := findingsOf(evaluate(t, set, Options{Rules: []string{QueueWithFreeCache}, EvalFrom: evalFrom}), QueueWithFreeCache)
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1", len(fs))
			}
			for _, c := range tt.want {
				if got := fs[0].Recommendation.String(); !strings.Contains(got, c) {
					t.Errorf("%q lacks %q", got, c)
				}
			}
		})
	}
}

func TestTightestTTFT(t *testing.T) {
	every := func(string) bool { return true }
	llama := func(m string) bool { return strings.HasPrefix(m, "llama") }
	objectives := []TTFTObjective{{"ttft-2s", 2, every}, {"llama-1s", 1, llama}, {"ttft-3s", 3, every}}
	for _, c := range []struct {
		model, want string
	}{
		{"llama-3", "llama-1s"},
		{"qwen", "ttft-2s"},
	} {
		if got := tightestTTFT(objectives, c.model); got.Name != c.want {
			t.Errorf("%s: %q, want %q", c.model, got.Name, c.want)
		}
	}
	if got := tightestTTFT(nil, "qwen"); got.Seconds != 0 {
		t.Errorf("without objectives: %+v, want none", got)
	}
}
