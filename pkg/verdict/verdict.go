package verdict

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Optimisation names one of the optimisations a verdict measures; the names are the verdict
// query's `optimisations` values.
type Optimisation string

// The optimisations, in the order rows show them.
const (
	ChunkedPrefill Optimisation = "chunked_prefill"
	PrefixCaching  Optimisation = "prefix_caching"
	SpecDecode     Optimisation = "spec_decode"
	FP8KVCache     Optimisation = "fp8_kv_cache"
	Concurrency    Optimisation = "concurrency"
)

// All lists every optimisation in row order.
var All = []Optimisation{ChunkedPrefill, PrefixCaching, SpecDecode, FP8KVCache, Concurrency}

// ParseOptimisations checks the query's list of declared optimisations.
func ParseOptimisations(names []string) ([]Optimisation, error) {
	out := make([]Optimisation, 0, len(names))
	for _, n := range names {
		o := Optimisation(strings.TrimSpace(n))
		known := false
		for _, a := range All {
			known = known || a == o
		}
		if !known {
			list := make([]string, len(All))
			for i, a := range All {
				list[i] = string(a)
			}
			return nil, fmt.Errorf("unknown optimisation %q in optimisations: use %s", n, strings.Join(list, ", "))
		}
		out = append(out, o)
	}
	return out, nil
}

// Outcome is a verdict.
type Outcome string

// The outcomes. A change within bucket resolution is "did not work": no improvement could be
// measured, and the reason says that the buckets are the limit.
const (
	Worked        Outcome = "worked"
	DidNotWork    Outcome = "did not work"
	NotEnoughData Outcome = "not enough data"
	NotInUse      Outcome = "not in use"
	NotComparable Outcome = "not comparable"
)

// Params are the stated bounds of the verdicts (see the package doc).
type Params struct {
	MinRequests       float64
	LoadTolerance     float64
	MeanChange        float64
	HitRate           float64
	Acceptance        float64
	Counterproductive float64
	FP8Halved         float64
	FP8Blocks         float64
	NearCeiling       float64
	WaitingShare      float64
	// ShareChange is the least a share (a hit rate, the share of requests aborted) must move, in
	// absolute terms, besides MeanChange: from 0.25% to 0.08% is -70% and no move at all.
	ShareChange float64
}

// DefaultParams are the bounds the package doc states.
func DefaultParams() Params {
	return Params{MinRequests: series.MinRequests, LoadTolerance: 0.25, MeanChange: 0.10, HitRate: 0.5, Acceptance: 0.7,
		Counterproductive: 0.6, FP8Halved: 0.65, FP8Blocks: 1.5, NearCeiling: 0.8, WaitingShare: 0.1, ShareChange: 0.01}
}

// Input is what a verdict compares.
type Input struct {
	Baseline, Current             *series.Set
	BaselineWindow, CurrentWindow Window
	// Declared are the optimisations the query says are in use, for what the data cannot tell.
	Declared []Optimisation
	Params   Params
}

// Row is the verdict on one optimisation of one instance and model.
type Row struct {
	Key          series.Key
	Optimisation Optimisation
	// Expected is the effect the seed promises.
	Expected string
	// Baseline and Current are the measured values in each window; Change what moved.
	Baseline, Current, Change string
	Outcome                   Outcome
	// Reason is one sentence that says why.
	Reason string
	// BaselineStats and CurrentStats carry the load of each window, and the rest of the numbers.
	BaselineStats, CurrentStats Stats
}

// Evaluate returns one row per optimisation for every instance and model in either window,
// sorted by instance, model, then optimisation order.
func Evaluate(in Input) []Row {
	order := keysOf(in)
	declared := map[Optimisation]bool{}
	for _, o := range in.Declared {
		declared[o] = true
	}
	var rows []Row
	for _, k := range order {
		base := summariseOrEmpty(in.Baseline, k, in.BaselineWindow)
		cur := summariseOrEmpty(in.Current, k, in.CurrentWindow)
		for _, o := range All {
			r := judge(o, base, cur, declared[o], in.Params)
			r.Key, r.Optimisation, r.BaselineStats, r.CurrentStats = k, o, base, cur
			r.Expected = expected(o, in.Params)
			rows = append(rows, r)
		}
	}
	return rows
}

// keysOf lists every instance and model in either window, sorted.
func keysOf(in Input) []series.Key {
	keys := map[series.Key]bool{}
	var order []series.Key
	for _, set := range []*series.Set{in.Baseline, in.Current} {
		if set == nil {
			continue
		}
		for _, k := range set.Keys() {
			if !keys[k] {
				keys[k] = true
				order = append(order, k)
			}
		}
	}
	sortKeys(order)
	return order
}

func summariseOrEmpty(set *series.Set, k series.Key, w Window) Stats {
	if set == nil {
		set = series.NewSet(series.Grid{})
	}
	return Summarise(set, k, w)
}

func sortKeys(keys []series.Key) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Instance != keys[j].Instance {
			return keys[i].Instance < keys[j].Instance
		}
		return keys[i].Model < keys[j].Model
	})
}

func expected(o Optimisation, p Params) string {
	switch o {
	case ChunkedPrefill:
		return "TTFT p99/p50 closer to 1 and TTFT p99 down"
	case PrefixCaching:
		return fmt.Sprintf("prefix-cache hit rate above %s and TTFT p50 down", num(p.HitRate))
	case SpecDecode:
		return fmt.Sprintf("draft acceptance above %s (counterproductive below %s) and decode time per output token down", num(p.Acceptance), num(p.Counterproductive))
	case FP8KVCache:
		return "cache_dtype fp8: KV usage per running request about halved, more KV blocks, about twice the concurrency before preemptions"
	default:
		return fmt.Sprintf("running near max_num_seqs (its observed ceiling) and waiting under %s of running", pct(p.WaitingShare))
	}
}

// judge applies the common gates (in use, enough data, like-for-like load), then the
// optimisation's own test.
func judge(o Optimisation, base, cur Stats, declared bool, p Params) Row {
	show := describers[o]
	r := Row{Baseline: show(base), Current: show(cur)}
	if ok, why := inUse(o, cur, declared); !ok {
		r.Outcome, r.Reason = NotInUse, why
		return r
	}
	if why := tooFew(base, cur, p); why != "" {
		r.Outcome, r.Reason = NotEnoughData, why
		return r
	}
	if why := loadDiffers(base, cur, p); why != "" {
		r.Outcome, r.Reason = NotComparable, why
		return r
	}
	r.Outcome, r.Change, r.Reason = tests[o](base, cur, p)
	return r
}

func inUse(o Optimisation, cur Stats, declared bool) (bool, string) {
	switch o {
	case ChunkedPrefill:
		if declared {
			return true, ""
		}
		return false, "chunked prefill does not show in vLLM's metrics: list chunked_prefill in the query's optimisations to evaluate it"
	case PrefixCaching:
		if cur.HasConfig && cur.Config.PrefixCachingKnown {
			if cur.Config.PrefixCaching {
				return true, ""
			}
			return false, "vllm:cache_config_info says enable_prefix_caching=False in the current window: start vLLM with --enable-prefix-caching to use it"
		}
		if declared || cur.HitRate > 0 {
			return true, ""
		}
		return false, "no vllm:cache_config_info says whether prefix caching is on and no prompt token hit the cache: list prefix_caching in the query's optimisations to evaluate it"
	case SpecDecode:
		if !math.IsNaN(cur.Acceptance) {
			return true, ""
		}
		if declared {
			return false, "declared in the query, but the current window has no speculative-decoding metrics, which vLLM (0.8 and later) exports whenever it is on"
		}
		return false, "no speculative-decoding metrics in the current window: speculative decoding is off"
	case FP8KVCache:
		if cur.HasConfig && cur.Config.CacheDType != "" {
			if cur.Config.FP8() {
				return true, ""
			}
			return false, fmt.Sprintf("vllm:cache_config_info says cache_dtype=%s in the current window, not an fp8 type", cur.Config.CacheDType)
		}
		if declared {
			return true, ""
		}
		return false, "no vllm:cache_config_info states the KV cache dtype: list fp8_kv_cache in the query's optimisations to evaluate it"
	}
	return true, ""
}

func tooFew(base, cur Stats, p Params) string {
	var parts []string
	for _, w := range []struct {
		name string
		st   Stats
	}{{"baseline", base}, {"current", cur}} {
		if w.st.Tiles == 0 {
			parts = append(parts, fmt.Sprintf("the %s window holds no whole rate window of data", w.name))
		} else if w.st.Requests < p.MinRequests {
			parts = append(parts, fmt.Sprintf("the %s window has %.0f requests, fewer than the %.0f a comparison needs", w.name, w.st.Requests, p.MinRequests))
		}
	}
	return strings.Join(parts, "; ")
}

// loadDiffers names the load measures that moved more than the tolerance.
func loadDiffers(base, cur Stats, p Params) string {
	var parts []string
	for _, m := range []struct {
		name, unit string
		b, c       float64
	}{
		{"request rate", " req/s", base.RequestRate, cur.RequestRate},
		{"mean prompt length", " tokens", base.PromptLength, cur.PromptLength},
		{"mean output length", " tokens", base.OutputLength, cur.OutputLength},
	} {
		if math.IsNaN(m.b) || math.IsNaN(m.c) || m.b <= 0 {
			continue
		}
		if d := (m.c - m.b) / m.b; math.Abs(d) > p.LoadTolerance {
			parts = append(parts, fmt.Sprintf("%s %s → %s%s (%+.0f%%)", m.name, num(m.b), num(m.c), m.unit, 100*d))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("the load changed by more than %s (%s): the difference would be the traffic's, not the optimisation's; choose a baseline with the same traffic", pct(p.LoadTolerance), strings.Join(parts, ", "))
}
