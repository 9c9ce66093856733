package diagnosis

import (
	"fmt"
	"math"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The queue rules: requests waiting with the KV cache free (the scheduler's limits), or full (more
// traffic than capacity), or deferred by a transient constraint. Their ids are persisted in
// dashboards, alert rules and settings.
const (
	QueueWithFreeCache = "queue_with_free_cache"
	PastTheKnee        = "past_the_knee"
	QueueDeferred      = "queue_deferred"
)

var queueWithFreeCache = Rule{
	ID:      QueueWithFreeCache,
	Title:   "Queue with free KV cache",
	Symptom: "requests wait although the KV cache has room",
	condition: "waiting / (running + waiting) > {waiting_ratio} and KV usage < {kv_usage} " +
		"(waiting for capacity only, when vLLM reports the reason)",
	Severity: Warning,
	Cause:    "the token budget per step is too low (or --max-num-seqs is reached)",
	Action:   "raise --max-num-batched-tokens (and --max-num-seqs if running sits at it)",
	Promise: series.Promise{Signal: series.QueueTimeMean, Direction: series.Down,
		Sentence: "mean queue time falls: steps that admit more tokens (or more sequences) take waiting requests while the KV cache has room"},
	Evidence: []series.Signal{series.WaitingRatio, series.Waiting, series.WaitingCapacity, series.Running, series.KVUsage},
	Params: []Param{
		waitingShareParam,
		param(kvUsageParam, 0.7, "fraction", Fraction, "KV usage below this"),
		forParam(5),
	},
	Required:  queueRequired,
	Optional:  []series.Signal{series.WaitingCapacity},
	eval:      queued(waitingShare, waitingRatioParam, (*judge).below, Warning),
	summary:   queueText(waitingShare, "waiting"),
	recommend: budgetAdvice,
	rank:      40,
	// Requests that wait get their first token late while those admitted at once do not: TTFT's
	// p99 drifts above twice its p50 by the queue alone. (On a vLLM that does not say why
	// requests wait, a deferred queue reads as this rule's, with that spread.)
	explains:  []string{PrefillBlocking},
	lengthens: map[string]int{StageQueue: 30},
}

var pastTheKnee = Rule{
	ID:        PastTheKnee,
	Title:     "Past the knee",
	Symptom:   "requests queue while the KV cache is nearly full",
	condition: "waiting / (running + waiting) > {waiting_ratio} and KV usage ≥ {kv_usage}",
	Severity:  Critical,
	Cause:     "more traffic than the instance's capacity",
	Action:    "add instances, route traffic elsewhere, or autoscale",
	Promise: series.Promise{Signal: series.WaitingRatio, Direction: series.Down,
		Sentence: "the share of requests waiting falls: with more instances (or less traffic routed here) arrivals no longer outrun the capacity"},
	Evidence: []series.Signal{series.WaitingRatio, series.Waiting, series.Running, series.KVUsage, series.RequestRate},
	Params: []Param{
		waitingShareParam,
		param(kvUsageParam, 0.85, "fraction", Fraction, "KV usage at or above this"),
		forParam(5),
	},
	Required: queueRequired,
	Optional: []series.Signal{series.WaitingCapacity},
	eval:     queued(waitingShare, waitingRatioParam, (*judge).atLeast, Critical),
	summary: func(e *env, i int) string {
		j := newJudge()
		return fmt.Sprintf("%s of requests waiting, KV usage %s", percent(waitingShare(e, &j, i)), num(e.optional(series.KVUsage, i)))
	},
	recommend: recommender{
		reads:   []series.Signal{series.RequestRate, series.Running, series.Waiting, series.PromptTPS},
		compute: instancesNeeded,
	},
	rank: 30,
	// A batch as wide as the cache holds decodes each token slower.
	lengthens: map[string]int{StageQueue: 20, StageDecode: 40},
}

var queueDeferred = Rule{
	ID:      QueueDeferred,
	Title:   "Queue deferred",
	Symptom: "requests wait deferred (LoRA slots, KV transfers) although the KV cache has room",
	condition: "deferred waiting / (running + waiting) > {deferred_ratio} and KV usage < {kv_usage} " +
		"(where vLLM reports why requests wait)",
	Severity: Warning,
	Cause: "waiting requests are held back by a transient constraint, not by capacity: their LoRA adapter finds no slot, " +
		"or their KV cache is still being transferred (disaggregated prefill, a KV connector)",
	Action: "raise --max-loras when LoRA adapters are served (vllm:lora_requests_info); in disaggregated serving, " +
		"check the KV connector (--kv-transfer-config) and the prefill instances",
	Promise: series.Promise{Signal: series.QueueTimeMean, Direction: series.Down,
		Sentence: "mean queue time falls: requests no longer wait for a LoRA slot or a KV transfer"},
	Evidence: []series.Signal{series.WaitingDeferred, series.WaitingCapacity, series.Waiting, series.Running, series.KVUsage},
	Params: []Param{
		param("deferred_ratio", 0.2, "fraction", Fraction, "share of requests waiting deferred, of running plus waiting, above this"),
		param(kvUsageParam, 0.85, "fraction", Fraction, "KV usage below this"),
		forParam(5),
	},
	Required:  []series.Signal{series.Running, series.Waiting, series.WaitingDeferred, series.KVUsage},
	eval:      queued(deferredShare, "deferred_ratio", (*judge).below, Warning),
	summary:   queueText(deferredShare, "deferred"),
	recommend: noValue("which constraint defers the requests (LoRA slots, KV transfers) is not in the metrics, so neither is the value to set"),
	rank:      45,
	// A deferred request's first token waits for its LoRA slot or its KV transfer while the
	// others' do not: TTFT's p99 drifts far above its p50 without any long prefill. (Where vLLM
	// reports the reason, queue_with_free_cache counts only capacity waits, so the two never
	// claim the same waiting requests.)
	explains:  []string{PrefillBlocking},
	lengthens: map[string]int{StageQueue: 35},
}

// deferredShare is deferred waiting / (running + waiting); an idle server has none: 0.
func deferredShare(e *env, j *judge, i int) float64 {
	r := e.value(j, series.Running, i)
	w := e.value(j, series.Waiting, i)
	d := e.value(j, series.WaitingDeferred, i)
	if r+w == 0 {
		return 0
	}
	return d / (r + w)
}

// What the queue rules share: the share waiting, and the signals it needs with KV usage.
var (
	waitingShareParam = param(waitingRatioParam, 0.2, "fraction", Fraction, "share of requests waiting, of running plus waiting, above this")
	queueRequired     = []series.Signal{series.Running, series.Waiting, series.KVUsage}
)

// queued is the condition of the queue rules: the share of the requests that wait
// (waitingShare, or deferredShare) above the parameter ratio, and KV usage compared with
// kv_usage by kv.
func queued(share func(e *env, j *judge, i int) float64, ratio string, kv func(j *judge, v, t float64), sev Severity) func(e *env, i int) outcome {
	return func(e *env, i int) outcome {
		j := newJudge()
		j.above(share(e, &j, i), e.p(ratio))
		kv(&j, e.value(&j, series.KVUsage, i), e.p(kvUsageParam))
		return j.outcome(sev)
	}
}

// queueText is the summary of queue_with_free_cache and queue_deferred: the share of running
// plus waiting that waits (waitingShare, or deferredShare), named what ("waiting", "deferred"),
// of running plus waiting, and KV usage.
func queueText(share func(e *env, j *judge, i int) float64, what string) func(e *env, i int) string {
	return func(e *env, i int) string {
		j := newJudge()
		return fmt.Sprintf("%s %s of %s, KV usage %s", percent(share(e, &j, i)), what,
			num(e.optional(series.Running, i)+e.optional(series.Waiting, i)), num(e.optional(series.KVUsage, i)))
	}
}

// waitingShare is waiting / (running + waiting), counting only requests that wait for capacity
// when vLLM reports the reason (deferred ones wait on LoRA slots or KV transfers, not on the
// budget). An idle server has no queue: 0.
func waitingShare(e *env, j *judge, i int) float64 {
	r := e.value(j, series.Running, i)
	w := e.value(j, series.Waiting, i)
	if c := e.optional(series.WaitingCapacity, i); !math.IsNaN(c) {
		w = c
	}
	if r+w == 0 {
		return 0
	}
	return w / (r + w)
}

// KneeInput is what InstancesNeeded reads: the finished requests per second over the finding
// (every reason, aborted ones included: a client that gave up was demand too), the queue's
// growth per second, and the highest request rate one instance of the model held, within the
// range, while waiting stayed below 10% of running (this instance's unqueued periods, or a
// healthy peer serving the same model).
type KneeInput struct {
	Finished, QueueGrowth float64
	Held                  float64
	HeldWhere             string
	// PromptTPS is the prompt tokens the instance prefilled per second over the finding.
	PromptTPS float64
	// TTFT is the tightest TTFT objective of the model, zero when the settings have none.
	TTFT TTFTObjective
}

// InstancesNeeded is how many instances carry this instance's traffic: arrivals (finished
// requests per second plus the queue's growth per second, from the finding's start to the
// queue's peak) over the rate one instance held without a queue, rounded up, and at least two
// while the finding holds: its queue grew, so this instance alone does not carry the load. Until
// then, vLLM's admission control (0.29 or later) can turn the excess away: its queued-tokens cap
// is the TTFT objective times the prefill throughput: the cap itself when the settings have a
// TTFT objective for the model, else the throughput to multiply by one's own.
func InstancesNeeded(in KneeInput) Recommendation {
	const flag = "instances serving this traffic"
	if math.IsNaN(in.Finished) {
		return unknownRec(flag, "no request rate in the window (vllm:request_success_total)")
	}
	if !(in.Held > 0) {
		return unknownRec(flag, "the range holds no step where an instance of this model ran with waiting below 10% of running, so the rate one instance holds is unknown: widen the range to include healthy traffic")
	}
	growth := in.QueueGrowth
	if math.IsNaN(growth) {
		growth = 0
	}
	arrival := in.Finished + growth
	ratio := math.Ceil(arrival / in.Held)
	need := math.Max(2, ratio)
	floorNote := ""
	if need > ratio {
		floorNote = ", at least 2 while the queue grows"
	}
	admission := ""
	switch {
	case in.PromptTPS > 0 && in.TTFT.Seconds > 0:
		admission = fmt.Sprintf("; meanwhile, on vLLM 0.29 or later, --max-num-queued-tokens %s (objective %s's %s s × %s prompt tokens/s, this instance's prefill throughput; the cap is server-wide) answers the excess with 503 instead of queueing it past the objective",
			whole(math.Round(in.TTFT.Seconds*in.PromptTPS)), in.TTFT.Name, num(in.TTFT.Seconds), whole(math.Round(in.PromptTPS)))
	case in.PromptTPS > 0:
		admission = fmt.Sprintf("; meanwhile, on vLLM 0.29 or later, --max-num-queued-tokens ≈ your TTFT objective in seconds × %s prompt tokens/s (this instance's prefill throughput; the cap is server-wide) answers the excess with 503 instead of queueing it", whole(math.Round(in.PromptTPS)))
	}
	return Recommendation{Flag: flag, Value: need, Current: Exact(1), CurrentSource: "this instance", Change: Raise,
		Effect: fmt.Sprintf("add %s instance(s) of this capacity (or route that share of the traffic elsewhere), so the queue drains%s", whole(need-1), admission),
		Arithmetic: fmt.Sprintf("arrivals %s/s finished (aborted included) + %s/s queue growth = %s/s; one instance held %s/s with waiting < 10%% of running (%s); ⌈%s / %s⌉ = %s%s",
			num(in.Finished), num(growth), num(arrival), num(in.Held), in.HeldWhere, num(arrival), num(in.Held), whole(ratio), floorNote)}
}

func instancesNeeded(e *env, sp span) Recommendation {
	g := e.set.Grid
	// Arrivals are measured while the queue grew: from the finding's start to the step where
	// waiting peaked (a finding that lasts until the queue drains again grows by nothing).
	top, peak := sp.start, math.Inf(-1)
	for i := sp.start; i <= sp.end; i++ {
		if w := e.at(series.Waiting, i); w > peak {
			top, peak = i, w
		}
	}
	in := KneeInput{Finished: e.meanOver(series.RequestRate, sp.start, top), QueueGrowth: math.NaN(), PromptTPS: e.meanOver(series.PromptTPS, sp.start, sp.end), TTFT: e.ttft}
	if dur := g.Time(top).Sub(g.Time(sp.start)).Seconds(); dur > 0 {
		in.QueueGrowth = (peak - e.at(series.Waiting, sp.start)) / dur
	}
	// One instance's capacity: the most it finished without a queue, here or on a peer serving
	// the same model.
	for _, k := range e.set.Keys() {
		if k.Model != e.key.Model {
			continue
		}
		x := &env{set: e.set, key: k}
		for i := 0; i < g.Len; i++ {
			r, w, rate := x.at(series.Running, i), x.at(series.Waiting, i), x.at(series.RequestRate, i)
			if r > 0 && w < 0.1*r && rate > in.Held {
				in.Held, in.HeldWhere = rate, "this instance"
				if k != e.key {
					in.HeldWhere = "its peer " + k.Instance
				}
			}
		}
	}
	return InstancesNeeded(in)
}
