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
		reads:   []series.Signal{series.SpecAcceptanceRate, series.SpecDraftLength, series.Running, series.TPOTMean},
		compute: specDraft,
	},
	rank: 60,
	// Every rejected draft token is verified for nothing in the decode step.
	lengthens: map[string]int{StageDecode: 10},
}

// SpecInput is what SpecDraft reads: the acceptance rate α (accepted over proposed draft
// tokens) and the draft length k (draft tokens per draft), averaged over the window; BreakEven,
// the acceptance rate below which the rule fires; Running, the mean batch. Measured is the
// instance's decode time per output token against its batch over the window, Peers the same of
// the instances serving its model without speculative decoding (Points 0 when not measured).
type SpecInput struct {
	Acceptance, DraftLength float64
	BreakEven               float64
	Running                 float64
	Measured, Peers         TPOTByBatch
}

// TPOTByBatch is a straight line through (running sequences, decode time per output token)
// points, TPOT ≈ Base + PerSeq × running: the shape of a decode step's cost, a fixed overhead
// plus a share per sequence. Low and High are the smallest and largest batch fitted.
type TPOTByBatch struct {
	Base, PerSeq float64
	Points       int
	Low, High    float64
}

// At is the fitted time per output token at a batch of running sequences.
func (f TPOTByBatch) At(running float64) float64 { return f.Base + f.PerSeq*running }

// minFitPoints is the fewest steps a TPOTByBatch rests on, and minFitSpread how much the
// largest batch must exceed the smallest: a line through one batch size says nothing of others.
const (
	minFitPoints = 10
	minFitSpread = 2.0
)

// FitTPOT fits the line by least squares; Points is 0 when there are fewer than minFitPoints
// points or the batches do not spread by minFitSpread.
func FitTPOT(running, tpot []float64) TPOTByBatch {
	n := float64(len(running))
	if len(running) < minFitPoints || len(running) != len(tpot) {
		return TPOTByBatch{}
	}
	var sx, sy, sxx, sxy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, x := range running {
		y := tpot[i]
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	den := n*sxx - sx*sx
	if !(lo > 0) || hi < minFitSpread*lo || den == 0 {
		return TPOTByBatch{}
	}
	slope := (n*sxy - sx*sy) / den
	return TPOTByBatch{Base: (sy - slope*sx) / n, PerSeq: slope, Points: len(running), Low: lo, High: hi}
}

// specBatchFlag is the speculative config's field that turns speculation off above a batch size.
const specBatchFlag = "--speculative-config disable_by_batch_size"

// specByBatch is the advice when the measurements show speculation paying at the instance's
// small batches and costing at its large ones, against peers of its model without it: the batch
// where the two lines cross bounds where speculation stays on. ok is false when the
// measurements do not show that (too few, or one side of the crossing only).
func specByBatch(in SpecInput) (Recommendation, bool) {
	m, p := in.Measured, in.Peers
	if m.Points == 0 || p.Points == 0 || !(m.PerSeq > p.PerSeq) {
		return Recommendation{}, false
	}
	low, high := m.At(m.Low)/p.At(m.Low), m.At(m.High)/p.At(m.High)
	if !(low < 1 && high > 1) {
		return Recommendation{}, false
	}
	cross := floor((p.Base - m.Base) / (m.PerSeq - p.PerSeq))
	if cross < 1 {
		return Recommendation{}, false
	}
	r := Recommendation{Flag: specBatchFlag, Value: cross,
		Effect: fmt.Sprintf("speculation pays below %s running sequences and costs above them: it turns off for larger batches "+
			"(where the vLLM version's --speculative-config does not accept disable_by_batch_size, disable speculative decoding: it costs at this instance's peak)",
			whole(cross)),
		Arithmetic: fmt.Sprintf("decode per output token here %s + %s × running s (%d steps, %s to %s running), on peers of the model without speculation %s + %s × running s (%d steps); equal at %s running; here ×%s the peers' at %s running and ×%s at %s",
			num(m.Base), num(m.PerSeq), m.Points, whole(math.Round(m.Low)), whole(math.Round(m.High)), num(p.Base), num(p.PerSeq), p.Points,
			num(cross), num(low), whole(math.Round(m.Low)), num(high), whole(math.Round(m.High)))}
	return r.settle(Lower, Unknown(), "disable_by_batch_size is not in vLLM's metrics", nil), true
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
	if r, ok := specByBatch(in); ok {
		return r
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
	in := SpecInput{Acceptance: e.meanOver(series.SpecAcceptanceRate, sp.start, sp.end),
		DraftLength: e.meanOver(series.SpecDraftLength, sp.start, sp.end), BreakEven: e.p("acceptance_rate"),
		Running: e.meanOver(series.Running, sp.start, sp.end)}
	in.Measured = FitTPOT(batchPoints(e, sp.start, sp.end))
	// Peers: the instances of the model without speculative decoding, over the whole range (any
	// of their batches tells what a step costs without drafts).
	var running, tpot []float64
	for _, k := range e.set.Keys() {
		peer := &env{set: e.set, key: k}
		if k.Model != e.key.Model || k == e.key || !math.IsNaN(peer.meanOver(series.SpecAcceptanceRate, 0, e.set.Grid.Len-1)) {
			continue
		}
		r, t := batchPoints(peer, 0, e.set.Grid.Len-1)
		running, tpot = append(running, r...), append(tpot, t...)
	}
	in.Peers = FitTPOT(running, tpot)
	return SpecDraft(in)
}

// batchPoints are an instance's (running sequences, mean time per output token) over steps
// [from, to] where it decoded.
func batchPoints(e *env, from, to int) (running, tpot []float64) {
	for i := from; i <= to; i++ {
		r, t := e.at(series.Running, i), e.at(series.TPOTMean, i)
		if r > 0 && t > 0 {
			running, tpot = append(running, r), append(tpot, t)
		}
	}
	return running, tpot
}
