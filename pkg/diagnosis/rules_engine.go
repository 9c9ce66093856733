package diagnosis

import (
	"fmt"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The engine's rule: an engine that holds requests and makes no progress. Its id is persisted in
// dashboards, alert rules and settings.
const (
	EngineStalled = "engine_stalled"
)

var engineStalled = Rule{
	ID:      EngineStalled,
	Title:   "Engine stalled",
	Symptom: "requests are running or waiting, yet the engine takes no step and generates no token",
	condition: "running + waiting > 0 while the instance is scraped, and no engine step (vllm:iteration_tokens_total_count) " +
		"and no generated token over the rate window",
	Severity: Critical,
	Cause:    "the engine is wedged (a hung collective, a deadlocked scheduler or worker) while its API server still answers /health",
	Action: "capture the engine's stack (py-spy dump --pid on the engine core's process) and its logs, then restart the engine; " +
		"make the health check follow the engine's progress (the engine-step counter), not /health alone",
	Promise: series.Promise{Signal: series.EngineStepRate, Direction: series.Up,
		Sentence: "engine steps resume: a restarted engine that makes progress steps again, so vllm:iteration_tokens_total counts steps and the hung requests and the queue are served"},
	Evidence: []series.Signal{series.EngineStepRate, series.GenerationTPS, series.Running, series.Waiting, series.RequestRate},
	// The rate window (1m by default) sees the stall only once it holds no step at all, about a
	// minute after the engine stopped: 90 s more put the finding out within 3 minutes of it.
	Params:   []Param{forParam(1.5)},
	Required: []series.Signal{series.Running, series.Waiting, series.GenerationTPS},
	Optional: []series.Signal{series.EngineStepRate},
	eval: func(e *env, i int) outcome {
		j := newJudge()
		// Work present: a gauge with no sample (a scrape gap) leaves the step unknown, never a
		// finding; an idle instance has nothing to make progress on.
		j.above(e.value(&j, series.Running, i)+e.value(&j, series.Waiting, i), 0)
		// No progress over the whole rate window: a rate needs two samples in it, so a scrape
		// gap or the window of a restart has none and stays unknown.
		j.atMost(e.value(&j, series.GenerationTPS, i), 0)
		if e.get(series.EngineStepRate) != nil {
			j.atMost(e.value(&j, series.EngineStepRate, i), 0)
		}
		return j.outcome(Critical)
	},
	summary: func(e *env, i int) string {
		return fmt.Sprintf("%s running, %s waiting, %s engine steps/s, %s generated tokens/s",
			num(e.optional(series.Running, i)), num(e.optional(series.Waiting, i)),
			num(e.optional(series.EngineStepRate, i)), num(e.optional(series.GenerationTPS, i)))
	},
	recommend: noValue("the remedy is a restart and a stack dump, not a flag's value"),
	// A wedged engine bounds everything else on the instance: it comes first.
	rank: 5,
	// Requests that arrive at a wedged engine wait, with the KV cache as it was when it stopped
	// (a queue with free cache, or past the knee when it stopped full), and clients give up on
	// them: those findings are the stall's, not causes of their own.
	explains: []string{QueueWithFreeCache, PastTheKnee, ClientTimeouts},
	// Every request in a wedged engine waits, in the queue or mid-prefill or mid-decode.
	lengthens: map[string]int{StageQueue: 5, StagePrefill: 5, StageDecode: 5},
}
