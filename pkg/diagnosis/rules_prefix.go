package diagnosis

import (
	"fmt"
	"math"
	"sort"

	"github.com/seed/vllm-datasource/pkg/series"
)

// The prefix cache's rule: prompts that should share a cached prefix and do not. Its id is
// persisted in dashboards, alert rules and settings.
const (
	PrefixCacheMiss = "prefix_cache_miss"
)

var prefixCacheMiss = Rule{
	ID:      PrefixCacheMiss,
	Title:   "Prefix cache missing",
	Symptom: "slow first tokens while the prefix cache rarely hits",
	condition: "TTFT p50 > {ttft_p50} s (lower bound of its bucket) and prefix-cache hit rate of first-time lookups < {hit_rate} " +
		"(preempted requests' recompute lookups discounted, {recompute_hit_share} of them taken as hits), with prefix caching on",
	Severity: Warning,
	Cause:    "prompts are not byte-identical where they should share a prefix (timestamps or session ids in the system prompt)",
	Action:   "make the shared prefix identical across requests; check --enable-prefix-caching",
	Promise: series.Promise{Signal: series.PrefixCacheHitRate, Direction: series.Up,
		Sentence: "the prefix-cache hit rate rises: a byte-identical shared prefix is prefilled once and then read from the cache"},
	Evidence: []series.Signal{series.TTFTP50, series.PrefixCacheHitRate, series.PromptLengthMean, series.PrefillTimeMean,
		series.PreemptionRate, series.PrefixCacheQueryTPS, series.PromptTPS},
	Params: []Param{
		param("ttft_p50", 0.5, "s", Seconds, "TTFT p50 above this, from the lower bound of its bucket"),
		param("hit_rate", 0.5, "fraction", Fraction, "prefix-cache hit rate (hit tokens over looked-up tokens) below this"),
		param(nearZeroHitRateParam, 0.02, "fraction", Fraction,
			"a hit rate at or below this with prompts longer than one KV block means not even one block was reused"),
		param(recomputeHitShareParam, 0.75, "fraction", Fraction,
			"share of a preempted request's recompute lookup taken as hits (its own blocks still cached) when discounting recomputes from the hit rate"),
		forParam(5),
	},
	Required: []series.Signal{series.TTFTP50, series.PrefixCacheHitRate},
	Optional: []series.Signal{series.PromptLengthMean, series.PreemptionRate, series.PrefixCacheQueryTPS, series.PromptTPS},
	Quantile: true,
	eval: func(e *env, i int) outcome {
		j := newJudge()
		j.below(firstHitRate(e, i).valueFor(&j), e.p("hit_rate"))
		// The quantile lies in (lo50, hi50]: lo50 ≥ the threshold makes "above it" certain.
		lo50, _ := e.bounds(&j, series.TTFTP50, i)
		j.atLeast(lo50, e.p("ttft_p50"))
		return j.outcome(Warning)
	},
	applicable: prefixCachingOn,
	refine:     shortPrefix,
	summary: func(e *env, i int) string {
		return fmt.Sprintf("TTFT p50 %s, prefix-cache hit rate %s", quantileText(e, series.TTFTP50, i), firstHitRate(e, i))
	},
	derived: func(e *env, sp span) string { return firstHitRate(e, sp.peak).discount() },
	recommend: recommender{
		reads:   []series.Signal{series.PrefixCacheHitRate, series.PromptLengthMean, series.PrefillTimeMean},
		compute: prefixReuse,
	},
	rank: 50,
	// Prompts that miss the prefix cache are prefilled whole, in the same steps as the decoding
	// sequences (chunked prefill mixes them), so every decode step grows with them.
	explains: []string{DecodeBound},
	// Whole prompts take longer to prefill, and the requests behind them wait.
	lengthens: map[string]int{StagePrefill: 10, StageQueue: 70},
}

// hitRate is the prefix-cache hit rate of first-time lookups at one step: what prefix_cache_miss
// compares, its finding states and its recommendation starts from (package doc, Interpretations).
type hitRate struct {
	value float64 // the first-time estimate; NaN without a hit rate
	raw   float64 // the counters' hit rate, recomputes included
	// recompute is R, the tokens per second taken out as recompute lookups (0: no discount),
	// queries the tokens looked up per second, share the recompute_hit_share in force,
	// preemptions and prompt the rate and the mean prompt R comes from, and processed the
	// prompt tokens processed per second when the lookups beyond them bound R.
	recompute, queries, share, preemptions, prompt, processed float64
}

// firstHitRate discounts preempted requests' recompute lookups from the hit rate at step i. vLLM
// admits a preempted request again and looks its prompt up once more, and that lookup mostly hits
// its own blocks, still cached: under many preemptions the counters' hit rate rises while no new
// prompt shares a prefix. The recompute lookups are R = preemption rate × mean prompt tokens, at
// most the lookups beyond the prompt tokens processed (vLLM releases that keep recomputes out of
// the counters show none, and are left as they are); a share recompute_hit_share of them hit.
// The first-time hit rate is (hits − share·R) / (queries − R), clamped to [0, 1]. Without the
// lookups' counter (vLLM V0), queries are the prompt tokens processed plus R. Without a
// preemption rate, a prompt length or a count of lookups, the hit rate stands as counted.
func firstHitRate(e *env, i int) hitRate {
	h := hitRate{raw: e.optional(series.PrefixCacheHitRate, i), share: e.p(recomputeHitShareParam),
		preemptions: e.optional(series.PreemptionRate, i), prompt: e.optional(series.PromptLengthMean, i)}
	h.value = h.raw
	q, processed := e.optional(series.PrefixCacheQueryTPS, i), e.optional(series.PromptTPS, i)
	r := h.preemptions * h.prompt
	switch {
	case math.IsNaN(h.raw) || !(r > 0):
		return h
	case !math.IsNaN(q) && !math.IsNaN(processed):
		if beyond := math.Max(0, q-processed); beyond < r {
			r, h.processed = beyond, processed
		}
	case math.IsNaN(q) && !math.IsNaN(processed):
		q = processed + r
	default:
		return h
	}
	if !(r > 0) || q-r <= 0 {
		return h
	}
	h.recompute, h.queries = r, q
	h.value = math.Max(0, math.Min(1, (h.raw*q-h.share*r)/(q-r)))
	return h
}

// valueFor is the rate a condition compares, with the reason when there is none.
func (h hitRate) valueFor(j *judge) float64 {
	if math.IsNaN(h.value) {
		j.lack("no " + string(series.PrefixCacheHitRate) + " sample")
	}
	return h.value
}

// String is the rate a finding states: the first-time estimate, with the counted rate beside it
// when the two differ.
func (h hitRate) String() string {
	if h.recompute == 0 {
		return num(h.value)
	}
	return fmt.Sprintf("%s of first-time lookups (%s counted)", num(h.value), num(h.raw))
}

// discount says whether recomputes were discounted, and by how much.
func (h hitRate) discount() string {
	switch {
	case h.recompute > 0:
	case h.preemptions > 0:
		return fmt.Sprintf("prefix-cache hit rate %s as counted: %s preemptions/s, but no lookup beyond the prompt tokens processed to discount as recomputes", num(h.raw), num(h.preemptions))
	default:
		return fmt.Sprintf("prefix-cache hit rate %s as counted: no preemption, no recompute lookup to discount", num(h.raw))
	}
	r := fmt.Sprintf("%s preemptions/s × %s prompt tokens = %s", num(h.preemptions), whole(math.Round(h.prompt)), whole(math.Round(h.recompute)))
	if h.processed > 0 {
		r = fmt.Sprintf("the lookups beyond the %s prompt tokens processed, fewer than %s preemptions/s × %s prompt tokens: %s",
			whole(math.Round(h.processed)), num(h.preemptions), whole(math.Round(h.prompt)), whole(math.Round(h.recompute)))
	}
	return fmt.Sprintf("prefix-cache hit rate %s counted, %s of first-time lookups: %s of %s tokens looked up per second discounted as recomputes, %s of them as hits",
		num(h.raw), num(h.value), r, whole(math.Round(h.queries)), num(h.share))
}

// prefixCachingOn makes prefix_cache_miss apply only where vllm:cache_config_info says prefix
// caching is on: with it off, a zero hit rate is expected and says nothing.
func prefixCachingOn(e *env) string {
	c, ok := e.cacheConfig()
	switch {
	case !ok:
		return "vllm:cache_config_info is missing for this instance, so whether prefix caching is on is unknown"
	case !c.PrefixCachingKnown:
		return "vllm:cache_config_info does not say whether prefix caching is on"
	case !c.PrefixCaching:
		return "prefix caching is off on this instance (enable_prefix_caching=False)"
	}
	return ""
}

// shortPrefix tells apart the cases prefix caching cannot serve at all. vLLM caches
// whole KV blocks, so a hit rate that stays near zero while prompts are longer than one block
// means no request reused even its first block: whatever the prompts share is shorter than one
// block, or differs within it. The metrics cannot tell those two apart (that needs the prompts),
// so the cause names both. Prompts shorter than one block cannot hit at all, and then the slow
// TTFT has another cause.
func shortPrefix(e *env, r span) (variant, cause, action string) {
	c, _ := e.cacheConfig()
	if c.BlockSize <= 0 {
		return "", "", ""
	}
	maxHit := math.Inf(-1)
	var lengths []float64
	for i := r.start; i <= r.end; i++ {
		if v := firstHitRate(e, i).value; !math.IsNaN(v) {
			maxHit = math.Max(maxHit, v)
		}
		if v := e.optional(series.PromptLengthMean, i); !math.IsNaN(v) {
			lengths = append(lengths, v)
		}
	}
	if len(lengths) == 0 {
		return "", "", ""
	}
	sort.Float64s(lengths)
	prompt := sortedWindow(lengths).median()
	block := float64(c.BlockSize)
	switch {
	case prompt < block:
		return "prompts_shorter_than_block",
			fmt.Sprintf("prompts average %.0f tokens, less than one KV block (%d tokens): prefix caching cannot reuse them, so the slow first tokens come from elsewhere", prompt, c.BlockSize),
			"look at the other findings of this instance"
	case maxHit <= e.p(nearZeroHitRateParam):
		return "shared_prefix_shorter_than_block",
			fmt.Sprintf("no request reused even one KV block (%d tokens) although prompts average %.0f tokens: the prefix they share is shorter than one block, or differs within its first %d tokens (a timestamp or session id at the top of the system prompt)", c.BlockSize, prompt, c.BlockSize),
			fmt.Sprintf("make at least the first %d tokens of every prompt identical: put the fixed instructions first and variable parts after them", c.BlockSize)
	}
	return "", "", ""
}

// PrefixInput is what PrefixReuse reads: the hit rate now and the one to expect (before the
// fault, or on healthy peers serving the same model, Source says which), the mean prompt
// length and prefill time now, and the KV block size.
type PrefixInput struct {
	HitNow, HitExpected float64
	Source              string
	PromptMean          float64
	PrefillMean         float64
	BlockSize           int
}

// PrefixReuse is the prefix-cache hit rate to expect once the shared prefix is identical, and
// the prefill time the misses cost per request: the missed tokens per request ((expected − now)
// × mean prompt) at the prefill time per computed token now (mean prefill ÷ (mean prompt ×
// (1 − hit now))). Fewer cached tokens per request than one KV block means the shared prefix
// is shorter than a block, which vLLM can never reuse.
func PrefixReuse(in PrefixInput) Recommendation {
	const flag = "prefix-cache hit rate"
	switch {
	case math.IsNaN(in.HitExpected):
		return unknownRec(flag, "no hit rate to expect: too little prefix-cache data in the hour before the finding and no healthy peer serving the same model")
	case math.IsNaN(in.HitNow) || math.IsNaN(in.PromptMean):
		return unknownRec(flag, "no hit rate or prompt length in the window (vllm:prefix_cache_hits_total, vllm:request_prompt_tokens)")
	}
	missed := math.Max(0, in.HitExpected-in.HitNow) * in.PromptMean
	r := Recommendation{Flag: flag, Value: round3(in.HitExpected)}
	cost := math.NaN()
	if computed := in.PromptMean * (1 - in.HitNow); computed > 0 && in.PrefillMean > 0 {
		cost = missed * in.PrefillMean / computed
		r.Effect = fmt.Sprintf("an identical shared prefix saves about %s of prefill per request", secondsText(cost))
		r.Arithmetic = fmt.Sprintf("(%s %s − %s now) × %s prompt tokens = %s tokens missed per request; × %s prefill / %s computed tokens = %s",
			num(in.HitExpected), in.Source, num(in.HitNow), whole(math.Round(in.PromptMean)), whole(math.Round(missed)), secondsText(in.PrefillMean), whole(math.Round(computed)), secondsText(cost))
	} else {
		r.Effect = "an identical shared prefix brings the hit rate back"
		r.Arithmetic = fmt.Sprintf("(%s %s − %s now) × %s prompt tokens = %s tokens missed per request (no prefill time to price them)",
			num(in.HitExpected), in.Source, num(in.HitNow), whole(math.Round(in.PromptMean)), whole(math.Round(missed)))
	}
	if in.BlockSize > 0 {
		cached := in.HitExpected * in.PromptMean
		if cached < float64(in.BlockSize) {
			r.Effect += fmt.Sprintf("; the prefix shared %s is %s tokens, shorter than one KV block (%d): vLLM never reuses it, lengthen it past %d tokens", in.Source, whole(math.Round(cached)), in.BlockSize, in.BlockSize)
		} else {
			r.Arithmetic += fmt.Sprintf("; %s tokens cached per request %s, %s KV blocks of %d", whole(math.Round(cached)), in.Source, num(math.Floor(cached/float64(in.BlockSize))), in.BlockSize)
		}
	}
	return r.settle(Raise, Exact(round3(in.HitNow)), "prefix-cache hit tokens over queried tokens over the finding", func() string {
		return fmt.Sprintf("the hit rate is already at the %s %s: the slow first tokens come from elsewhere; look at the other findings of this instance", num(in.HitExpected), in.Source)
	})
}

// firstHitRateKey names the first-time hit rate's baseline among the env's baselines: a series
// the rule derives (firstHitRate), not one pkg/signals fetches.
var firstHitRateKey = baseKey{sig: series.PrefixCacheHitRate + ":first_time"}

// meanFirstHitRate is the first-time hit rate averaged over steps [from, to].
func meanFirstHitRate(e *env, from, to int) float64 {
	return meanOf(func(i int) float64 { return firstHitRate(e, i).value }, from, to)
}

// prefixReuse expects the hit rate of the hour before the finding (its baseline) when that
// reached the rule's hit_rate, else the median over the finding's window of the healthy peers
// (the same model on other instances, hit rate at or above hit_rate). Every hit rate it reads is
// the rule's own, firstHitRate: recomputes discounted.
func prefixReuse(e *env, sp span) Recommendation {
	c, _ := e.cacheConfig()
	expected := e.baselineOf(firstHitRateKey, func() *series.Series {
		x := series.NewSeries(firstHitRateKey.sig, e.key, e.set.Grid.Len)
		for i := range x.Values {
			x.Values[i] = firstHitRate(e, i).value
		}
		return x
	})
	in := PrefixInput{HitNow: meanFirstHitRate(e, sp.start, sp.end),
		PromptMean: e.meanOver(series.PromptLengthMean, sp.start, sp.end), PrefillMean: e.meanOver(series.PrefillTimeMean, sp.start, sp.end),
		BlockSize: c.BlockSize, HitExpected: expected.value[sp.start], Source: "in the hour before"}
	if math.IsNaN(in.HitExpected) || in.HitExpected < e.p("hit_rate") {
		// Healthy peers: other instances serving the same model whose hit rate over the same
		// window stayed at or above the rule's threshold; their median.
		var peers []float64
		for _, k := range e.set.Keys() {
			if k.Model != e.key.Model || k.Instance == e.key.Instance {
				continue
			}
			peer := &env{set: e.set, key: k, rule: e.rule}
			if v := meanFirstHitRate(peer, sp.start, sp.end); v >= e.p("hit_rate") {
				peers = append(peers, v)
			}
		}
		if len(peers) > 0 {
			sort.Float64s(peers)
			in.HitExpected, in.Source = sortedWindow(peers).median(), fmt.Sprintf("on %d healthy peers of the model", len(peers))
		} else if !math.IsNaN(in.HitExpected) {
			in.HitExpected = math.NaN()
		}
	}
	return PrefixReuse(in)
}
