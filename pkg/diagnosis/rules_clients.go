package diagnosis

import (
	"fmt"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The clients' rules: requests given up on before they finished, and answers cut short by the
// limits the requests set. Their ids are persisted in dashboards, alert rules and settings.
const (
	ClientTimeouts   = "client_timeouts"
	OutputsTruncated = "outputs_truncated"
)

var clientTimeouts = Rule{
	ID:        ClientTimeouts,
	Title:     "Clients timing out",
	Symptom:   "a share of requests aborted before they finished",
	condition: "aborted requests / finished requests > {abort_ratio}",
	Severity:  Critical,
	Cause:     "clients hit their timeout: the latency objective is already broken",
	Action:    "look at the other findings of this instance; shed load or add capacity",
	Promise: series.Promise{Signal: series.AbortRatio, Direction: series.Down,
		Sentence: "the share of aborted requests falls: answers that come within the clients' timeouts are not abandoned"},
	Evidence: []series.Signal{series.AbortRatio, series.RequestRate, series.E2EP99},
	Params: []Param{
		param("abort_ratio", 0.05, "fraction", Fraction, "aborted over all finished requests above this"),
		forParam(5),
	},
	Required: []series.Signal{series.AbortRatio},
	eval: func(e *env, i int) outcome {
		j := newJudge()
		j.above(e.value(&j, series.AbortRatio, i), e.p("abort_ratio"))
		return j.outcome(Critical)
	},
	summary: func(e *env, i int) string {
		return fmt.Sprintf("%s of requests aborted", percent(e.optional(series.AbortRatio, i)))
	},
	recommend: noValue("the cause is another finding of the instance, whose recommendation applies"),
	// Aborted requests are the clients' verdict on whatever else is wrong: beside a cause that
	// leaves requests served slowly the finding stays primary, outranked for the headline; only a
	// stalled engine, which serves them not at all, explains it (engine_stalled's link).
	rank: 110,
}

var outputsTruncated = Rule{
	ID:      OutputsTruncated,
	Title:   "Outputs truncated",
	Symptom: "a share of answers stopped at their length limit: fast but cut short",
	condition: "requests finished by length / finished requests > {length_ratio} " +
		"and ≥ {baseline_factor}× its baseline",
	Severity: Warning,
	Cause:    "answers reach the requests' max_tokens or the context limit (--max-model-len)",
	Action:   "raise the clients' max_tokens, or --max-model-len when prompts fill the context",
	Promise: series.Promise{Signal: series.LengthRatio, Direction: series.Down,
		Sentence: "the share of requests cut at their length limit falls: answers fit their max_tokens"},
	Evidence: []series.Signal{series.LengthRatio, series.OutputLengthMean, series.OutputLengthP95, series.MaxTokensMean, series.RequestRate},
	Params: []Param{
		param(lengthRatioParam, 0.2, "fraction", Fraction, "requests finished by length over all finished requests above this"),
		param(baselineFactorParam, 1.5, "ratio", Factor, "the length share over its baseline, at or above this"),
		forParam(5),
	},
	Required:  []series.Signal{series.LengthRatio},
	Baselines: []series.Signal{series.LengthRatio},
	eval: func(e *env, i int) outcome {
		j := newJudge()
		v := e.value(&j, series.LengthRatio, i)
		j.above(v, e.p(lengthRatioParam))
		j.atLeast(v, e.p(baselineFactorParam)*e.baseValue(&j, series.LengthRatio, i))
		return j.outcome(Warning)
	},
	summary: func(e *env, i int) string {
		return fmt.Sprintf("%s of requests finished by length (baseline %s), output mean %s tokens against max_tokens mean %s",
			percent(e.optional(series.LengthRatio, i)), percent(e.baseline(series.LengthRatio, false).value[e.baseStep(i)]),
			num(e.optional(series.OutputLengthMean, i)), num(e.optional(series.MaxTokensMean, i)))
	},
	recommend: noValue("max_tokens is each client's own limit: the evidence sets the output lengths against it, and the client decides"),
	rank:      105,
	standsAlone: "answers cut at a limit the requests set come from no other rule's mechanism and cause none of their " +
		"symptoms (shorter answers lighten the load)",
}
