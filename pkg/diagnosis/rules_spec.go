package diagnosis

import (
	"fmt"
	"math"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The speculative decoding rule: a drafter whose tokens are mostly rejected. Its id is
// persisted in dashboards, alert rules and settings.
const (
	SpecDecodeInefficient = "spec_decode_inefficient"
)

var specDecodeInefficient = Rule{
	ID:         SpecDecodeInefficient,
	Title:      "Speculative decoding inefficient",
	Symptom:    "most draft tokens are rejected: speculation costs more than it saves",
	condition:  "draft acceptance rate < {acceptance_rate} (critical below {critical_below})",
	Severity:   Warning,
	Escalation: &Escalation{Severity: Critical, Param: criticalBelowParam, Base: "acceptance_rate"},
	Cause:      "a drafter of another model family, temperature above 0.9, or a very large batch",
	Action:     "change the drafter (--speculative-config) or disable speculative decoding",
	Promise: series.Promise{Signal: series.TPOTMean, Direction: series.Down,
		Sentence: "decode time per output token falls: fewer rejected draft tokens are verified at every step"},
	Evidence: []series.Signal{series.SpecAcceptanceRate, series.SpecAcceptanceLength, series.Running},
	Params: []Param{
		param("acceptance_rate", 0.6, "fraction", Fraction, "accepted draft tokens over proposed draft tokens below this"),
		param(criticalBelowParam, 0.5, "fraction", Fraction, "below this acceptance rate the finding is critical"),
		forParam(5),
	},
	Required: []series.Signal{series.SpecAcceptanceRate},
	eval: func(e *env, i int) outcome {
		j := newJudge()
		v := e.value(&j, series.SpecAcceptanceRate, i)
		j.below(v, e.p("acceptance_rate"))
		sev := Warning
		if v < e.p(criticalBelowParam) {
			sev = Critical
		}
		return j.outcome(sev)
	},
	summary: func(e *env, i int) string {
		return fmt.Sprintf("acceptance rate %s", num(e.optional(series.SpecAcceptanceRate, i)))
	},
	recommend: recommender{
		reads:   []series.Signal{series.SpecAcceptanceRate, series.SpecDraftLength, series.Running},
		compute: specDraft,
	},
	rank: 60,
	// Every rejected draft token is verified for nothing in the decode step.
	lengthens: map[string]int{StageDecode: 10},
}

// SpecInput is what SpecDraft reads: the acceptance rate α (accepted over proposed draft
// tokens) and the draft length k (draft tokens per draft), averaged over the window; BreakEven,
// the acceptance rate below which the rule fires; Running, the mean batch.
type SpecInput struct {
	Acceptance, DraftLength float64
	BreakEven               float64
	Running                 float64
}

// SpecDraft is the num_speculative_tokens that maximises the speedup estimate
// (1 + accepted per draft) / (1 + c·k), where c, the cost of a draft token as a share of a
// target model step, is the rule's own threshold: at acceptance rate c a draft of any length
// breaks even (1 + c·k over 1 + c·k), so the rule and its advice use one model, and a finding
// (acceptance below c at the current k) is never told that the current draft pays. vLLM accepts
// draft tokens in order until the first rejection, so with p the acceptance at each position the
// accepted tokens per draft of length k are p + p² + … + p^k; measured, they are α·k, which gives
// p. The estimate is then evaluated for every k' from 0 (no speculation: 1) to k: a shorter
// draft, or 0 (disable). The draft cost grows with the batch (each running sequence verifies its
// draft), so the advice names the measured batch for disable_by_batch_size, which keeps
// speculation only for smaller batches.
func SpecDraft(in SpecInput) Recommendation {
	const flag = "--speculative-config num_speculative_tokens"
	switch {
	case math.IsNaN(in.Acceptance):
		return unknownRec(flag, "no draft acceptance rate in the window (vllm:spec_decode_num_accepted_tokens_total)")
	case !(in.DraftLength >= 1):
		return unknownRec(flag, "no draft length in the window (vllm:spec_decode_num_drafts_total, vLLM 0.8 or later)")
	}
	k := int(math.Round(in.DraftLength))
	accepted := in.Acceptance * in.DraftLength
	p := positionAcceptance(accepted, k)
	speedup := func(j int) float64 {
		gain, pi := 1.0, 1.0
		for range j {
			pi *= p
			gain += pi
		}
		return gain / (1 + in.BreakEven*float64(j))
	}
	best := 0
	for j := 1; j <= k; j++ {
		if speedup(j) > speedup(best) {
			best = j
		}
	}
	r := Recommendation{Flag: flag, Value: float64(best),
		Arithmetic: fmt.Sprintf("α %s × k %s = %s accepted per draft, so acceptance %s per position; a draft token costs %s of a step (the acceptance rate at which speculation breaks even); speedup (1 + %s) / (1 + %s × %d) = %s now, %s at k = %d",
			num(in.Acceptance), num(in.DraftLength), num(accepted), num(p), num(in.BreakEven), num(accepted), num(in.BreakEven), k, num(speedup(k)), num(speedup(best)), best)}
	batch := ""
	if in.Running > 0 {
		batch = fmt.Sprintf("; if it paid at smaller batches, and where the vLLM version's --speculative-config accepts disable_by_batch_size, a value below the %s sequences running now keeps it for those only", whole(math.Round(in.Running)))
	}
	if best == 0 {
		r.Effect = "disable speculative decoding: every draft length costs more than it saves" + batch
	} else {
		r.Effect = fmt.Sprintf("shorten the draft from %d to %d tokens: estimated ×%s instead of ×%s%s", k, best, num(speedup(best)), num(speedup(k)), batch)
	}
	return r.settle(Lower, Exact(float64(k)), "draft tokens per draft, vllm:spec_decode_num_draft_tokens_total over vllm:spec_decode_num_drafts_total", func() string {
		return fmt.Sprintf("acceptance %s over the window is at or above the %s at which speculation breaks even: the finding fired on steps where it dipped; look at the acceptance per position (vllm:spec_decode_num_accepted_tokens_per_pos_total) and the sampling temperature of the clients", num(in.Acceptance), num(in.BreakEven))
	})
}

// positionAcceptance solves p + p² + … + p^k = accepted for p in [0, 1] by bisection.
func positionAcceptance(accepted float64, k int) float64 {
	if accepted <= 0 {
		return 0
	}
	if accepted >= float64(k) {
		return 1
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		sum, pi := 0.0, 1.0
		for range k {
			pi *= mid
			sum += pi
		}
		if sum < accepted {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Round((lo+hi)/2*1000) / 1000
}

func specDraft(e *env, sp span) Recommendation {
	return SpecDraft(SpecInput{Acceptance: e.meanOver(series.SpecAcceptanceRate, sp.start, sp.end),
		DraftLength: e.meanOver(series.SpecDraftLength, sp.start, sp.end), BreakEven: e.p("acceptance_rate"),
		Running: e.meanOver(series.Running, sp.start, sp.end)})
}
