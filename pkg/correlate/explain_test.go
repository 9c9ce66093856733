package correlate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

func TestExplainAttributesStages(t *testing.T) {
	cases := []struct {
		name                   string
		queue, prefill, decode float64
		e2e                    float64
		dominant               Stage
		clamped                bool
	}{
		{"queue dominates", 3.1, 1.0, 0.8, 5.0, StageQueue, false},
		{"decode dominates", 0.1, 0.3, 4.0, 4.5, StageDecode, false},
		{"stages exceed e2e: other clamped", 1.0, 2.0, 2.0, 4.8, StagePrefill, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := request(keyA, at(0), at(1))
			r.Queue, r.Prefill, r.Decode, r.E2E = c.queue, c.prefill, c.decode, c.e2e
			e := Explain(Row{Request: r, DecodePerToken: math.NaN()})
			if e.Dominant != c.dominant || e.OtherClamped != c.clamped {
				t.Fatalf("dominant %s (clamped %v), want %s (%v)", e.Dominant, e.OtherClamped, c.dominant, c.clamped)
			}
			total := c.e2e
			if c.clamped {
				total = c.queue + c.prefill + c.decode
			}
			sum := 0.0
			for _, st := range e.Stages {
				sum += st.Share
				if math.Abs(st.Share-st.Seconds/total) > 1e-12 || st.Seconds < 0 {
					t.Errorf("%s: %v s, share %v; want a share of %v s", st.Stage, st.Seconds, st.Share, total)
				}
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("shares add up to %v, want 1", sum)
			}
			if other := e.Stage(StageOther).Seconds; math.Abs(other-math.Max(c.e2e-c.queue-c.prefill-c.decode, 0)) > 1e-12 {
				t.Errorf("other %v s, want e2e minus the stages, at least 0", other)
			}
			if c.clamped != strings.Contains(strings.Join(e.Notes, " "), "set to 0") {
				t.Errorf("notes %q: a clamped other must be noted, only then", e.Notes)
			}
		})
	}
}

func TestExplainNamesTheFindingBehindTheStageThatMadeItSlow(t *testing.T) {
	sat := &diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: keyA, Action: "lower --max-num-seqs or --max-model-len", Headline: true}
	spec := &diagnosis.Finding{Rule: diagnosis.SpecDecodeInefficient, Key: keyA, Action: "change the drafter"}
	miss := &diagnosis.Finding{Rule: diagnosis.PrefixCacheMiss, Key: keyA, Title: "Prefix cache misses on instance " + keyA.Instance, Action: "make the shared prefix identical"}
	cases := []struct {
		name     string
		stages   [4]float64 // queue, prefill, decode, e2e
		findings []*diagnosis.Finding
		reason   ReasonCode
		want     *diagnosis.Finding
		explains bool
		focus    Stage
	}{
		{"queue: KV saturation", [4]float64{3.1, 1, 0.8, 5}, []*diagnosis.Finding{spec, sat}, QueueOverHalf, sat, true, StageQueue},
		{"decode: the drafter before KV saturation", [4]float64{0.1, 0.3, 4, 4.5}, []*diagnosis.Finding{sat, spec}, SlowDecode, spec, true, StageDecode},
		{"slow first token while decode dominates: the prefill's cause", [4]float64{0.1, 2, 6, 8.2}, []*diagnosis.Finding{spec, miss}, TTFTVsPrompt, miss, true, StagePrefill},
		{"decode: an unrelated finding is still named", [4]float64{0.1, 0.3, 4, 4.5}, []*diagnosis.Finding{miss}, SlowDecode, miss, false, StageDecode},
		{"no finding", [4]float64{3.1, 1, 0.8, 5}, nil, QueueOverHalf, nil, false, StageQueue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := request(keyA, at(0), at(1))
			r.Queue, r.Prefill, r.Decode, r.E2E = c.stages[0], c.stages[1], c.stages[2], c.stages[3]
			states := []State{{0.9, 0.97}, {40, 60}, {10, 25}, {0.2, 0.3}, {1.5, 2.3}, {0.6, 0.4}, {0.7, 0.6}}
			row := Row{Request: r, States: states, Findings: c.findings, DecodePerToken: math.NaN(),
				Reasons: []Reason{{Code: c.reason}}}
			e := Explain(row)
			if e.Focus != c.focus || e.Finding != c.want || e.Explains != c.explains {
				t.Fatalf("focus %s, finding %v (explains %v); want %s, %v (%v)", e.Focus, e.Finding, e.Explains, c.focus, c.want, c.explains)
			}
			st, dom := e.Stage(e.Focus), e.Stage(e.Dominant)
			wantParts := []string{"Slow because it", e.amount(st), secs(dom.Seconds), stageWhere[e.Dominant], keyA.Instance}
			if c.want != nil {
				wantParts = append(wantParts, "finding "+c.want.Rule, "Action: "+c.want.Action)
			} else {
				wantParts = append(wantParts, "no finding was active")
			}
			if c.want == sat {
				wantParts = append(wantParts, fmt.Sprintf("usage %.2f", states[0].Worst), fmt.Sprintf("%.1f preemptions/s", states[4].Worst))
			}
			for _, p := range wantParts {
				if !strings.Contains(e.Sentence, p) && !strings.Contains(e.Sentence, strings.Replace(p, "finding ", "Finding ", 1)) {
					t.Errorf("sentence %q lacks %q", e.Sentence, p)
				}
			}
		})
	}
}

func TestExplainSaysWhatASpanWithoutStagesLacks(t *testing.T) {
	r := request(keyA, at(0), at(1))
	r.Present = present(traces.FieldTTFT, traces.FieldE2E)
	e := Explain(Row{Request: r, DecodePerToken: math.NaN()})
	if e.Dominant != "" || !strings.Contains(e.Sentence, "cannot be attributed") {
		t.Fatalf("dominant %q, sentence %q: without stages nothing can be attributed", e.Dominant, e.Sentence)
	}
	if notes := strings.Join(e.Notes, " "); !strings.Contains(notes, "queue") || !strings.Contains(notes, "decode") {
		t.Fatalf("notes %q should name the missing stages", notes)
	}
}

func TestExplainStatesTheMetricsWhenNoFindingIsActive(t *testing.T) {
	r := request(keyA, at(0), at(1))
	states := make([]State, len(series.Joined))
	for i := range states {
		states[i] = State{AtStart: math.NaN(), Worst: math.NaN()}
	}
	states[0] = State{AtStart: 0.4, Worst: 0.45}
	e := Explain(Row{Request: r, States: states, DecodePerToken: math.NaN()})
	if !strings.HasPrefix(e.Sentence, "Took ") || !strings.Contains(e.Sentence, "KV usage up to 0.45") {
		t.Fatalf("sentence %q: an ordinary request is described, with its metric state", e.Sentence)
	}
}

func TestExplainAdvisesAProfileOnlyWithoutASpecificCause(t *testing.T) {
	sat := &diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: keyA, Headline: true}
	miss := &diagnosis.Finding{Rule: diagnosis.PrefixCacheMiss, Key: keyA}
	pbound := &diagnosis.Finding{Rule: diagnosis.PrefillBound, Key: keyA, Headline: true}
	dbound := &diagnosis.Finding{Rule: diagnosis.DecodeBound, Key: keyA, Headline: true}
	cases := []struct {
		name     string
		findings []*diagnosis.Finding
		reasons  []Reason
		want     bool
	}{
		{"slow, a finding explains its stage", []*diagnosis.Finding{sat}, []Reason{{Code: QueueOverHalf}}, false},
		{"slow, no finding active", nil, []Reason{{Code: QueueOverHalf}}, true},
		{"slow, only an unrelated finding active", []*diagnosis.Finding{miss}, []Reason{{Code: SlowDecode}}, true},
		{"prefill_bound with no specific cause", []*diagnosis.Finding{pbound}, []Reason{{Code: TTFTVsPrompt}}, true},
		{"decode_bound with no specific cause", []*diagnosis.Finding{dbound}, nil, true},
		{"not slow, no finding", nil, nil, false},
		{"not slow, a specific cause active", []*diagnosis.Finding{sat}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := request(keyA, at(0), at(1))
			r.Queue, r.Prefill, r.Decode, r.E2E = 3.1, 1, 0.8, 5
			r.PromptTokens, r.OutputTokens = 1234, 56
			r.Present.Add(traces.FieldPromptTokens)
			r.Present.Add(traces.FieldOutputTokens)
			e := Explain(Row{Request: r, States: make([]State, len(series.Joined)), Findings: c.findings, DecodePerToken: math.NaN(), Reasons: c.reasons})
			if got := e.Profile != ""; got != c.want {
				t.Fatalf("profile advice %q; want advice: %v", e.Profile, c.want)
			}
			if !c.want {
				return
			}
			for _, p := range []string{keyA.Instance, "--profiler-config", `"profiler":"torch"`, "torch_profiler_dir", "POST /start_profile", "POST /stop_profile",
				"1234 prompt tokens", "max_tokens 56", "--capture-range=cudaProfilerApi", "profiling all traffic"} {
				if !strings.Contains(e.Profile, p) {
					t.Errorf("advice %q lacks %q", e.Profile, p)
				}
			}
		})
	}
}
