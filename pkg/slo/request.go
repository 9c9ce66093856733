package slo

import (
	"fmt"
	"math"
	"strings"
)

// Request is what one request's span says of it, for judging it against objectives: seconds,
// NaN when the span lacks the value.
type Request struct {
	Model string
	// TTFT and E2E run from the request's arrival; TPOT is its decode time per output token
	// after the first (vLLM's per-request time per output token).
	TTFT, TPOT, E2E float64
	// FinishReasons are the span's finish reasons, comma-separated (empty when unset).
	FinishReasons string
}

// Outcome says how a request stands against one objective.
type Outcome string

// Outcomes of Judge.
const (
	Met    Outcome = "met"
	Missed Outcome = "missed"
	// Unknown: the span lacks what the objective measures, or the objective is not judged per
	// request (Judgement.Why says which).
	Unknown Outcome = "unknown"
)

// Judgement is a request against one objective.
type Judgement struct {
	Objective Objective
	// Value is the request's measurement of the indicator (seconds; NaN for availability and
	// when unknown).
	Value   float64
	Outcome Outcome
	// Why says why the outcome is unknown; empty otherwise.
	Why string
}

// Judge returns the request against each objective that applies to its model, in the order
// given. A latency is good at or under its threshold, as the objective's histogram counts it;
// ITL is an objective on every token, which a span does not time, so it is unknown per request.
func Judge(objectives []Objective, r Request) []Judgement {
	var out []Judgement
	for _, o := range objectives {
		if !o.Matches(r.Model) {
			continue
		}
		j := Judgement{Objective: o, Value: math.NaN()}
		switch o.Indicator {
		case Availability:
			j.Outcome = Met
			for _, reason := range strings.Split(r.FinishReasons, ",") {
				if reason = strings.TrimSpace(reason); reason == "abort" || reason == "error" {
					j.Outcome = Missed
				}
			}
		case ITL:
			j.Outcome, j.Why = Unknown, "inter-token latency is an objective on each token, and a span does not time its tokens"
		default:
			j.Value = r.latency(o.Indicator)
			switch {
			case math.IsNaN(j.Value):
				j.Outcome, j.Why = Unknown, fmt.Sprintf("the span has no %s", o.Indicator)
			case j.Value <= o.Threshold:
				j.Outcome = Met
			default:
				j.Outcome = Missed
			}
		}
		out = append(out, j)
	}
	return out
}

func (r Request) latency(i Indicator) float64 {
	switch i {
	case TTFT:
		return r.TTFT
	case E2E:
		return r.E2E
	case TPOT:
		return r.TPOT
	}
	return math.NaN()
}

// String reads a judgement as an operator would: "ttft-1s missed (1.84 s > 1 s)".
func (j Judgement) String() string {
	o := j.Objective
	switch {
	case j.Outcome == Unknown:
		return fmt.Sprintf("%s unknown (%s)", o.Name, j.Why)
	case o.Indicator == Availability:
		return fmt.Sprintf("%s %s", o.Name, j.Outcome)
	case j.Outcome == Met:
		return fmt.Sprintf("%s met (%.3g s ≤ %.3g s)", o.Name, j.Value, o.Threshold)
	}
	return fmt.Sprintf("%s missed (%.3g s > %.3g s)", o.Name, j.Value, o.Threshold)
}
