package diagnosis

import (
	"math"
	"slices"
	"sort"
)

// Parameter names that the rules' code names in more than one place.
const (
	waitingRatioParam      = "waiting_ratio"
	kvUsageParam           = "kv_usage"
	baselineFactorParam    = "baseline_factor"
	meanRiseParam          = "mean_rise"
	nearZeroHitRateParam   = "near_zero_hit_rate"
	recomputeHitShareParam = "recompute_hit_share"
	criticalBelowParam     = "critical_below"
	preemptionRateParam    = "preemption_rate"
	preemptionsPerMinParam = "preemptions_per_minute"
	lengthRatioParam       = "length_ratio"
)

// The request stages a rule's mechanism can lengthen (Rule.lengthens), as vLLM's spans time them.
const (
	StageQueue   = "queue"
	StagePrefill = "prefill"
	StageDecode  = "decode"
)

// matrix is every rule, in the order the catalog, the timelines and the notices list them
// (README's matrix table). Each rule is one value, in the file of its family (rules_*.go);
// TestEveryRuleIsComplete checks that each holds all a rule needs.
//
// Ranks, the headline's (Rule.rank) and each stage's (Rule.lengthens), step by 10: a rule added
// between two takes a number between theirs, so that no other rule is renumbered and rules added
// side by side do not touch each other's values. The headline ranks put first what most likely
// bounds an instance: an engine that makes no progress at all, running out of KV memory
// (preemptions slow every stage), then more load than capacity, the scheduler's budget, cache and
// drafter efficiency, the shape of prefills, the unexplained symptoms, answers cut at their
// length limit (which bounds no throughput), and last the clients' timeouts, a consequence of
// whatever else is wrong. A stage's ranks put first the causes that lengthen it directly.
var matrix = []Rule{
	engineStalled,
	prefillBlocking,
	tokenBudgetStarved,
	prefixCacheMiss,
	specDecodeInefficient,
	kvCacheSaturated,
	preemptionsFreeCache,
	queueWithFreeCache,
	queueDeferred,
	pastTheKnee,
	clientTimeouts,
	outputsTruncated,
	prefillBound,
	decodeBound,
}

// What the rules' values imply, derived once.
var (
	byID = func() map[string]*Rule {
		m := make(map[string]*Rule, len(matrix))
		for i := range matrix {
			m[matrix[i].ID] = &matrix[i]
		}
		return m
	}()
	causes      = explainers(matrix)
	stageCauses = stageRanking(matrix)
)

// explainers maps each rule's id to the ids of the rules that explain it: those it names in
// explainedBy and those that name it in explains.
func explainers(rules []Rule) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		out[r.ID] = append(out[r.ID], r.explainedBy...)
		for _, s := range r.explains {
			out[s] = append(out[s], r.ID)
		}
	}
	return out
}

// related reports whether one of two rules explains the other.
func related(a, b string) bool {
	return slices.Contains(causes[a], b) || slices.Contains(causes[b], a)
}

// HeadlineRank is a rule's rank for an instance's headline, lowest first: the order in which
// the rules' findings compete to name its likely bottleneck. An unknown id ranks last.
func HeadlineRank(id string) int {
	if r, ok := byID[id]; ok {
		return r.rank
	}
	return math.MaxInt
}

// stageRanking lists, for each stage, the ids of the rules that lengthen it in the order of their
// ranks for that stage.
func stageRanking(rules []Rule) map[string][]string {
	out := map[string][]string{}
	rank := map[string]map[string]int{}
	for _, r := range rules {
		rank[r.ID] = r.lengthens
		for st := range r.lengthens {
			out[st] = append(out[st], r.ID)
		}
	}
	for st, ids := range out {
		sort.Slice(ids, func(i, j int) bool { return rank[ids[i]][st] < rank[ids[j]][st] })
	}
	return out
}

// StageCauses are the rules whose mechanism lengthens a request's stage (StageQueue,
// StagePrefill, StageDecode), most specific first: an explanation of a request names the first
// of them that was active during it.
func StageCauses(stage string) []string { return slices.Clone(stageCauses[stage]) }

func forParam(minutes float64) Param {
	return Param{Name: ForParam, Default: minutes * 60, Unit: "s", Kind: Seconds,
		Description: "how long the condition must hold before the rule fires"}
}

func param(name string, def float64, unit string, kind Kind, desc string) Param {
	return Param{Name: name, Default: def, Unit: unit, Kind: kind, Description: desc}
}
