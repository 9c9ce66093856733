package diagnosis

import (
	"fmt"
	"math"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Recommendation is the value a finding's action should set, computed from the instance's own
// configuration and traffic over the finding's window. When a number cannot be had, Value is
// NaN and Missing names the metric or vLLM version that is absent; the finding's Action still
// names the flag.
type Recommendation struct {
	// Flag is the vLLM flag (or, for prefix_cache_miss, the quantity) the value is for.
	Flag  string
	Value float64
	// Effect is what setting it should do.
	Effect string
	// Arithmetic is the computation in one line a person can check.
	Arithmetic string
	// Missing names what is absent when Value is NaN.
	Missing string
}

// Known reports whether the recommendation carries a value.
func (r Recommendation) Known() bool { return r.Flag != "" && !math.IsNaN(r.Value) }

// String is the recommendation in one line: flag and value, effect, arithmetic; or what is
// missing; empty for a rule without recommendations.
func (r Recommendation) String() string {
	switch {
	case r.Known():
		return fmt.Sprintf("%s %s: %s (%s)", r.Flag, whole(r.Value), r.Effect, r.Arithmetic)
	case r.Missing != "":
		return "no value: " + r.Missing
	}
	return ""
}

func unknownRec(flag, missing string) Recommendation {
	return Recommendation{Flag: flag, Value: math.NaN(), Missing: missing}
}

// floor rounds down, forgiving the last bits of floating point (44.99999999 is 45).
func floor(v float64) float64 { return math.Floor(v + 1e-9*math.Abs(v)) }

// whole prints a count of tokens, requests or sequences without an exponent; fractions as num.
func whole(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return num(v)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func secondsText(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", 1000*v)
	}
	return fmt.Sprintf("%.2f s", v)
}

// recommender computes a finding's Recommendation from the instance's series over the
// finding's window. reads are the signals it needs beyond the rule's own, fetched with them. A
// rule that recommends no value says why in none, and has no compute.
type recommender struct {
	reads   []series.Signal
	compute func(e *env, sp span) Recommendation
	none    string
}

// noValue is the recommender of a rule whose action sets no number; why says so.
func noValue(why string) recommender { return recommender{none: why} }

func recommendFor(e *env, sp span) Recommendation {
	if f := e.rule.recommend.compute; f != nil {
		return f(e, sp)
	}
	return Recommendation{Value: math.NaN()}
}

// meanOver is a signal's mean over steps [from, to], NaN steps skipped.
func (e *env) meanOver(s series.Signal, from, to int) float64 {
	sum, n := 0.0, 0
	for i := from; i <= to; i++ {
		if v := e.at(s, i); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
