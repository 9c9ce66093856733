package correlate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// Stage is a part of a request's end-to-end time.
type Stage string

// The stages, in the order a request goes through them.
const (
	StageQueue   Stage = diagnosis.StageQueue
	StagePrefill Stage = diagnosis.StagePrefill
	StageDecode  Stage = diagnosis.StageDecode
	// StageOther is e2e minus the three engine stages: front end, tokenisation, detokenisation.
	StageOther Stage = "other"
)

// StageTime is a stage's seconds and share of the request; NaN when unknown.
type StageTime struct {
	Stage   Stage
	Seconds float64
	Share   float64
}

// Explanation attributes one request's time and names what slowed it.
type Explanation struct {
	Row Row
	// Stages are queue, prefill, decode and other, in that order.
	Stages []StageTime
	// Dominant is the stage with the most time; empty when no stage is known.
	Dominant Stage
	// Focus is the stage the request's first anomaly points at (queue or prefill for a slow
	// first token, decode for slow decoding), else the dominant stage: the one to explain.
	Focus Stage
	// OtherClamped: the engine stages added up to more than e2e (they run on another clock),
	// so other is 0 and the shares are of their sum.
	OtherClamped bool
	// Finding is the active finding that best explains the focus stage, else the instance's
	// headline among the active ones; nil when none was active.
	Finding *diagnosis.Finding
	// Explains: Finding is one of the causes of the focus stage.
	Explains bool
	// Notes say what the explanation could not use.
	Notes []string
	// Sentence is the explanation in one sentence.
	Sentence string
	// Profile is the third tier of the operators' method (metrics, then traces, then a profile):
	// the steps to profile the request's instance, set when
	// the request stands out and no active finding explains its slow stage, or when the
	// finding named is prefill_bound or decode_bound (a symptom with no specific cause on the
	// instance). Empty otherwise.
	Profile string
}

// Explain attributes a joined request's time to its stages and writes its explanation.
func Explain(r Row) Explanation {
	e := Explanation{Row: r}
	e.stages()
	e.Focus = e.Dominant
	if len(r.Reasons) > 0 {
		if st := e.reasonStage(r.Reasons[0]); st != "" {
			e.Focus = st
		}
	}
	e.Finding, e.Explains = pickFinding(r.Findings, e.Focus)
	if miss := r.Missing(); len(miss) > 0 {
		e.Notes = append(e.Notes, "the span lacks "+strings.Join(miss, ", ")+": those stages are not attributed")
	}
	if e.OtherClamped {
		e.Notes = append(e.Notes, "queue + prefill + decode exceed e2e (the engine's clock and the front end's differ): other is set to 0 and shares are of the three stages")
	}
	e.Sentence = e.sentence()
	e.Profile = e.profile()
	return e
}

// profile writes the profiling steps when the metrics have no specific cause (see Profile).
func (e *Explanation) profile() string {
	r := e.Row
	symptom := e.Finding != nil && (e.Finding.Rule == diagnosis.PrefillBound || e.Finding.Rule == diagnosis.DecodeBound)
	unexplained := len(r.Reasons) > 0 && (e.Finding == nil || !e.Explains)
	if !symptom && !unexplained {
		return ""
	}
	inst := r.Instance
	if inst == "" {
		inst = "the instance"
	}
	shape := "with the same prompt and output lengths as this one"
	if r.Present.Has(traces.FieldPromptTokens) && r.Present.Has(traces.FieldOutputTokens) {
		shape = fmt.Sprintf("shaped like this one (%d prompt tokens; max_tokens %d, its output)", r.PromptTokens, r.OutputTokens)
	}
	why := "no active finding explains its " + string(e.Focus) + " time"
	if symptom {
		why = e.Finding.Rule + " fires with no specific cause on the instance"
	}
	return fmt.Sprintf("Profile %s, since %s: restart it with --profiler-config '{\"profiler\":\"torch\",\"torch_profiler_dir\":\"/tmp/vllm_profile\"}', "+
		"POST /start_profile, send a few requests %s, POST /stop_profile; the trace lands in /tmp/vllm_profile (open it in Perfetto or TensorBoard). "+
		"For kernels, run it under Nsight Systems scoped to that window: nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop vllm serve ... "+
		"Profile only those few requests, on that one instance: profiling all traffic slows every request and buries the slow one.",
		inst, why, shape)
}

func (e *Explanation) stages() {
	r := e.Row
	get := func(f traces.Field, v float64) float64 {
		if r.Present.Has(f) {
			return v
		}
		return math.NaN()
	}
	q, p, d := get(traces.FieldQueue, r.Queue), get(traces.FieldPrefill, r.Prefill), get(traces.FieldDecode, r.Decode)
	e2e := get(traces.FieldE2E, r.E2E)
	other := e2e - q - p - d
	total := e2e
	if other < 0 {
		other, total, e.OtherClamped = 0, q+p+d, true
	}
	if math.IsNaN(total) {
		total = nanSum(q, p, d)
	}
	best := math.Inf(-1)
	for _, st := range []StageTime{{Stage: StageQueue, Seconds: q}, {Stage: StagePrefill, Seconds: p}, {Stage: StageDecode, Seconds: d}, {Stage: StageOther, Seconds: other}} {
		st.Share = math.NaN()
		if total > 0 && !math.IsNaN(st.Seconds) {
			st.Share = st.Seconds / total
		}
		if !math.IsNaN(st.Seconds) && st.Seconds > best {
			best, e.Dominant = st.Seconds, st.Stage
		}
		e.Stages = append(e.Stages, st)
	}
}

// nanSum adds the known values; NaN when none is known.
func nanSum(vs ...float64) float64 {
	s, found := 0.0, false
	for _, v := range vs {
		if !math.IsNaN(v) {
			s, found = s+v, true
		}
	}
	if !found {
		return math.NaN()
	}
	return s
}

// Stage returns one stage's time.
func (e *Explanation) Stage(s Stage) StageTime {
	for _, st := range e.Stages {
		if st.Stage == s {
			return st
		}
	}
	return StageTime{Stage: s, Seconds: math.NaN(), Share: math.NaN()}
}

// pickFinding chooses the finding to name: a cause of the dominant stage (primary findings
// first, then the stage's order of causes), else the headline, else the first primary one.
func pickFinding(fs []*diagnosis.Finding, dominant Stage) (*diagnosis.Finding, bool) {
	causes := diagnosis.StageCauses(string(dominant))
	var best *diagnosis.Finding
	bestRank := 0
	for _, f := range fs {
		i := slices.Index(causes, f.Rule)
		if i < 0 {
			continue
		}
		rank := i
		if f.SecondaryTo != "" {
			rank += len(causes)
		}
		if best == nil || rank < bestRank {
			best, bestRank = f, rank
		}
	}
	if best != nil {
		return best, true
	}
	for _, f := range fs {
		if f.Headline {
			return f, false
		}
	}
	for _, f := range fs {
		if f.SecondaryTo == "" {
			return f, false
		}
	}
	if len(fs) > 0 {
		return fs[0], false
	}
	return nil, false
}

func (e *Explanation) sentence() string {
	r := e.Row
	var b strings.Builder
	switch {
	case e.Dominant == "":
		b.WriteString("The span carries no stage latencies, so its time cannot be attributed")
	case len(r.Reasons) > 0:
		b.WriteString("Slow because it " + e.stagePhrase(e.Stage(e.Focus)))
		if e.Focus != e.Dominant {
			dom := e.Stage(e.Dominant)
			fmt.Fprintf(&b, " (most of its time went %s: %s, %s)", stageWhere[e.Dominant], secs(dom.Seconds), pct(dom.Share))
		}
	default:
		fmt.Fprintf(&b, "Took %s, mostly %s: it %s", secs(nanOr(r.E2E, nanSum(r.Queue, r.Prefill, r.Decode))),
			stageWhere[e.Dominant], e.stagePhrase(e.Stage(e.Dominant)))
	}
	inst := instanceName(r.Instance)
	switch f := e.Finding; {
	case f == nil:
		fmt.Fprintf(&b, "; no finding was active on %s while it ran", inst)
		if ctx := stateText(r); ctx != "" {
			b.WriteString(" (" + ctx + ")")
		}
		b.WriteString(".")
	case e.Explains:
		fmt.Fprintf(&b, " while %s: finding %s on %s. Action: %s.", context(f, r), f.Rule, f.Key.Instance, strings.TrimSuffix(f.Action, "."))
	default:
		fmt.Fprintf(&b, ". Finding %s was active on %s: %s. Action: %s.", f.Rule, f.Key.Instance, context(f, r), strings.TrimSuffix(f.Action, "."))
	}
	if f := e.Finding; f != nil && f.Recommendation.Known() {
		fmt.Fprintf(&b, " Recommendation: %s.", f.Recommendation)
	}
	return b.String()
}

// reasonStage is the stage an anomaly points at: a slow first token is the larger of queue and
// prefill; empty when the span lacks what it takes.
func (e *Explanation) reasonStage(r Reason) Stage {
	switch r.Code {
	case QueueOverHalf:
		return StageQueue
	case SlowDecode:
		return StageDecode
	}
	q, p := e.Stage(StageQueue).Seconds, e.Stage(StagePrefill).Seconds
	switch {
	case math.IsNaN(q) || math.IsNaN(p):
		return ""
	case q > p:
		return StageQueue
	}
	return StagePrefill
}

var stageWhere = map[Stage]string{
	StageQueue: "in the queue", StagePrefill: "in prefill", StageDecode: "decoding", StageOther: "outside the engine's stages",
}

// amount is a stage's seconds and share, such as "3.1 s (62%)".
func (e *Explanation) amount(st StageTime) string {
	a := secs(st.Seconds)
	if !math.IsNaN(st.Share) {
		a += " (" + pct(st.Share) + ")"
	}
	return a
}

func (e *Explanation) stagePhrase(st StageTime) string {
	r := e.Row
	amount := e.amount(st)
	switch st.Stage {
	case StageQueue:
		return "waited " + amount + " in the queue"
	case StagePrefill:
		if r.Present.Has(traces.FieldPromptTokens) {
			return fmt.Sprintf("spent %s in prefill of %d prompt tokens", amount, r.PromptTokens)
		}
		return "spent " + amount + " in prefill"
	case StageDecode:
		if r.Present.Has(traces.FieldOutputTokens) {
			s := fmt.Sprintf("spent %s decoding %d tokens", amount, r.OutputTokens)
			if !math.IsNaN(r.DecodePerToken) {
				s += " (" + secs(r.DecodePerToken) + " per token)"
			}
			return s
		}
		return "spent " + amount + " decoding"
	}
	return "spent " + amount + " outside the engine's stages (front end, tokenisation, detokenisation)"
}

func nanOr(v, alt float64) float64 {
	if math.IsNaN(v) {
		return alt
	}
	return v
}

// context describes, with the request's worst metric values, the condition a finding names.
func context(f *diagnosis.Finding, r Row) string {
	kv, pre := r.State(series.KVUsage).Worst, r.State(series.PreemptionRate).Worst
	wr := r.State(series.WaitingRatio).Worst
	var parts []string
	add := func(format string, v float64) {
		if !math.IsNaN(v) {
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	var lead string
	switch f.Rule {
	case diagnosis.KVCacheSaturated:
		lead = "the KV cache was saturated"
		add("usage %.2f", kv)
		add("%.1f preemptions/s", pre)
	case diagnosis.PreemptionsFreeCache:
		lead = "requests were being preempted with KV cache to spare"
		add("%.1f preemptions/s", pre)
		add("usage %.2f", kv)
	case diagnosis.PastTheKnee:
		lead = "the server had more traffic than capacity"
		add("%.0f%% of requests waiting", 100*wr)
		add("KV usage %.2f", kv)
	case diagnosis.QueueWithFreeCache:
		lead = "requests queued while the KV cache had room"
		add("%.0f%% of requests waiting", 100*wr)
		add("KV usage %.2f", kv)
	case diagnosis.PrefixCacheMiss:
		lead = "the prefix cache missed"
		add("hit rate %.0f%%", 100*r.State(series.PrefixCacheHitRate).Worst)
	case diagnosis.SpecDecodeInefficient:
		lead = "speculative decoding was wasting its drafts"
		add("acceptance rate %.0f%%", 100*r.State(series.SpecAcceptanceRate).Worst)
	default:
		return lowerFirst(strings.TrimSuffix(f.Title, " on instance "+f.Key.Instance))
	}
	if len(parts) == 0 {
		return lead
	}
	return lead + " (" + strings.Join(parts, ", ") + ")"
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// stateText summarises the metric state during a request when no finding names it.
func stateText(r Row) string {
	var parts []string
	if v := r.State(series.KVUsage).Worst; !math.IsNaN(v) {
		parts = append(parts, fmt.Sprintf("KV usage up to %.2f", v))
	}
	if v := r.State(series.Waiting).Worst; !math.IsNaN(v) {
		parts = append(parts, fmt.Sprintf("up to %.0f waiting", v))
	}
	if v := r.State(series.PreemptionRate).Worst; !math.IsNaN(v) {
		parts = append(parts, fmt.Sprintf("%.1f preemptions/s", v))
	}
	return strings.Join(parts, ", ")
}
