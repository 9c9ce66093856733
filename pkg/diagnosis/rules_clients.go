package diagnosis

import (
	"fmt"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The clients' rule: requests given up on before they finished. Its id is persisted in
// dashboards, alert rules and settings.
const (
	ClientTimeouts = "client_timeouts"
)

var clientTimeouts = Rule{
	ID:        ClientTimeouts,
	Title:     "Clients timing out",
	Symptom:   "a share of requests aborted before they finished",
	condition: "aborted requests / finished requests > {abort_ratio}",
	Severity:  Critical,
	Cause:     "clients hit their timeout: the latency objective is already broken",
	Action:    "look at the other findings of this instance; shed load or add capacity",
	Evidence:  []series.Signal{series.AbortRatio, series.RequestRate, series.E2EP99},
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
