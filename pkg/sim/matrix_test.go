package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// This file evaluates the rules' conditions (README's matrix table) on the simulated scrapes
// by its own arithmetic, apart from pkg/diagnosis, the way the plugin sees them: rates over 1m
// windows of 15 s scrapes, quantiles only as the bucket intervals that contain them.

// point is the signals of one instance at one scrape.
type point struct {
	at                      time.Time
	n                       float64 // requests that got a first token in the window
	p50, p99                [2]float64
	itl99                   [2]float64
	kv, waitRatio           float64 // waitRatio counts only capacity waits where vLLM says why
	deferRatio              float64
	kvAvg                   float64 // the gauge averaged over the window, as avg_over_time
	preempt1m, preempt2m    float64 // per second
	abortRatio, lengthRatio float64
	hitRate, acceptance     float64
	// firstHitRate is the hit rate with the recomputes discounted as prefix_cache_miss
	// discounts them (the diagnosis's README row): R = preemptions × mean prompt, at most the
	// lookups beyond the prompt tokens, 0.75 of R taken as hits.
	firstHitRate           float64
	queue, prefill, decode float64 // means over the window
	prefixCaching, specOn  bool
	// work is running + waiting; steps and generated are the engine steps and output tokens
	// over the window, NaN with fewer than two scrapes in it (a rate needs two samples).
	work, steps, generated float64
}

// view reads one instance's series out of a result.
type view struct {
	st    *store
	times []time.Time
}

func (r *Result) view(instance string) view {
	for _, st := range r.stores {
		if st.instance == instance {
			var times []time.Time
			if f := st.families["vllm:num_requests_running"]; f != nil {
				times = f.order[0].times
			}
			return view{st: st, times: times}
		}
	}
	return view{}
}

// rows returns a family's series matching the label values given (name=value pairs).
func (v view) rows(name string, match ...string) []*series {
	f := v.st.families[name]
	if f == nil {
		return nil
	}
	var out []*series
next:
	for _, s := range f.order {
		for i := 0; i+1 < len(match); i += 2 {
			ok := false
			for _, l := range s.labels {
				if l[0] == match[i] && l[1] == match[i+1] {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// at returns the row of s at time t, or nil.
func (s *series) at(t time.Time) []float64 {
	for i, x := range s.times {
		if x.Equal(t) {
			return s.rows[i*s.width() : (i+1)*s.width()]
		}
	}
	return nil
}

// increase is a counter's increase between two times, handling a reset as Prometheus does.
func (v view) increase(name string, from, to time.Time, match ...string) float64 {
	var total float64
	for _, s := range v.rows(name, match...) {
		total += seriesIncrease(s, from, to, 0)
	}
	return total
}

func seriesIncrease(s *series, from, to time.Time, col int) float64 {
	var inc, prev float64
	have := false
	w := s.width()
	for i, t := range s.times {
		if t.Before(from) || t.After(to) {
			continue
		}
		x := s.rows[i*w+col]
		if have {
			if x >= prev {
				inc += x - prev
			} else {
				inc += x
			}
		}
		prev, have = x, true
	}
	return inc
}

// hist is a histogram's increase over a window: per bucket, count and sum.
type hist struct {
	bounds []float64
	counts []float64 // cumulative
	count  float64
	sum    float64
}

func (v view) hist(name string, from, to time.Time) hist {
	ss := v.rows(name)
	if len(ss) == 0 {
		return hist{}
	}
	s := ss[0]
	h := hist{bounds: s.bounds, counts: make([]float64, len(s.bounds))}
	for i := range s.bounds {
		h.counts[i] = seriesIncrease(s, from, to, i)
	}
	h.count = seriesIncrease(s, from, to, len(s.bounds))
	h.sum = seriesIncrease(s, from, to, len(s.bounds)+1)
	return h
}

// quantile is the bucket interval (lower, upper] that holds quantile q.
func (h hist) quantile(q float64) [2]float64 {
	if h.count == 0 {
		return [2]float64{math.NaN(), math.NaN()}
	}
	rank := q * h.count
	lower := 0.0
	for i, c := range h.counts {
		if c >= rank {
			return [2]float64{lower, h.bounds[i]}
		}
		lower = h.bounds[i]
	}
	return [2]float64{lower, math.Inf(1)}
}

func (h hist) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

func (v view) gauge(name string, t time.Time, match ...string) float64 {
	var total float64
	for _, s := range v.rows(name, match...) {
		if row := s.at(t); row != nil {
			total += row[0]
		}
	}
	return total
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func (v view) points(window time.Duration) []point {
	var out []point
	for _, t := range v.times {
		from := t.Add(-window)
		if from.Before(v.times[0]) {
			continue
		}
		ttft := v.hist("vllm:time_to_first_token_seconds", from, t)
		itl := v.hist("vllm:inter_token_latency_seconds", from, t)
		running, waiting := v.gauge("vllm:num_requests_running", t), v.gauge("vllm:num_requests_waiting", t)
		// Where vLLM reports why requests wait, the queue rules count only those waiting for
		// capacity, and queue_deferred the deferred ones.
		capacity, deferred := waiting, math.NaN()
		if len(v.rows("vllm:num_requests_waiting_by_reason")) > 0 {
			capacity = v.gauge("vllm:num_requests_waiting_by_reason", t, "reason", "capacity")
			deferred = v.gauge("vllm:num_requests_waiting_by_reason", t, "reason", "deferred")
		}
		finished := v.increase("vllm:request_success_total", from, t)
		p := point{
			at: t, n: ttft.count, p50: ttft.quantile(0.5), p99: ttft.quantile(0.99), itl99: itl.quantile(0.99),
			kv:          v.gauge("vllm:kv_cache_usage_perc", t),
			waitRatio:   ratio(capacity, running+waiting),
			deferRatio:  ratio(deferred, running+waiting),
			preempt1m:   v.increase("vllm:num_preemptions_total", from, t) / window.Seconds(),
			preempt2m:   v.increase("vllm:num_preemptions_total", t.Add(-2*window), t) / (2 * window.Seconds()),
			abortRatio:  ratio(v.increase("vllm:request_success_total", from, t, "finished_reason", "abort"), finished),
			lengthRatio: ratio(v.increase("vllm:request_success_total", from, t, "finished_reason", "length"), finished),
			hitRate:     ratio(v.increase("vllm:prefix_cache_hits_total", from, t), v.increase("vllm:prefix_cache_queries_total", from, t)),
			acceptance:  ratio(v.increase("vllm:spec_decode_num_accepted_tokens_total", from, t), v.increase("vllm:spec_decode_num_draft_tokens_total", from, t)),
			queue:       v.hist("vllm:request_queue_time_seconds", from, t).mean(),
			prefill:     v.hist("vllm:request_prefill_time_seconds", from, t).mean(),
			decode:      v.hist("vllm:request_decode_time_seconds", from, t).mean(),
		}
		var samples int
		for _, u := range v.times {
			if u.After(from) && !u.After(t) {
				p.kvAvg += v.gauge("vllm:kv_cache_usage_perc", u)
				samples++
			}
		}
		p.kvAvg /= float64(samples)
		p.firstHitRate = p.hitRate
		queries, prompts := v.increase("vllm:prefix_cache_queries_total", from, t), v.increase("vllm:prompt_tokens_total", from, t)
		if r := min(p.preempt1m*window.Seconds()*v.hist("vllm:request_prompt_tokens", from, t).mean(), queries-prompts); r > 0 {
			p.firstHitRate = max(0, (p.hitRate*queries-0.75*r)/(queries-r))
		}
		p.work = running + waiting
		p.steps, p.generated = math.NaN(), math.NaN()
		if samples >= 2 {
			p.steps = v.hist("vllm:iteration_tokens_total", from, t).count
			p.generated = v.increase("vllm:generation_tokens_total", from, t)
		}
		for _, s := range v.rows("vllm:cache_config_info") {
			if s.at(t) != nil {
				for _, l := range s.labels {
					if l[0] == "enable_prefix_caching" {
						p.prefixCaching = l[1] == "True"
					}
				}
			}
		}
		p.specOn = len(v.rows("vllm:spec_decode_num_draft_tokens_total")) > 0
		out = append(out, p)
	}
	return out
}

// baseline is the instance's signals over a stretch before any fault.
type baseline struct {
	p50, p99, itl99 [2]float64
	prefill, decode float64
	lengthRatio     float64
}

func (v view) baseline(from, to time.Time) baseline {
	ttft := v.hist("vllm:time_to_first_token_seconds", from, to)
	itl := v.hist("vllm:inter_token_latency_seconds", from, to)
	return baseline{p50: ttft.quantile(0.5), p99: ttft.quantile(0.99), itl99: itl.quantile(0.99),
		prefill: v.hist("vllm:request_prefill_time_seconds", from, to).mean(),
		decode:  v.hist("vllm:request_decode_time_seconds", from, to).mean(),
		lengthRatio: ratio(v.increase("vllm:request_success_total", from, to, "finished_reason", "length"),
			v.increase("vllm:request_success_total", from, to))}
}

// minRequests is the fewest requests in a window for a quantile rule to count.
const minRequests = 20

// conditions are the rules' conditions with their default thresholds, quantiles judged
// by their bucket intervals.
var conditions = map[string]func(p point, b baseline) bool{
	RulePrefillBlocking: func(p point, _ baseline) bool {
		return p.n >= minRequests && p.p99[0]/p.p50[1] > 2
	},
	RuleTokenBudgetStarved: func(p point, b baseline) bool {
		return p.n >= minRequests && p.p50[0] >= 1.5*b.p50[1] && p.p99[0] >= 1.5*b.p99[1] &&
			p.prefill >= 1.5*b.prefill && p.queue < p.prefill && p.kv < 0.85 && p.preempt1m == 0
	},
	RulePrefixCacheMiss: func(p point, _ baseline) bool {
		return p.n >= minRequests && p.p50[0] >= 0.5 && p.prefixCaching && p.firstHitRate < 0.5
	},
	RuleSpecDecodeInefficient: func(p point, _ baseline) bool { return p.specOn && p.acceptance < 0.6 },
	RuleKVCacheSaturated:      func(p point, _ baseline) bool { return p.preempt2m > 0.5 && p.kv > 0.85 },
	RulePreemptionsFreeCache:  func(p point, _ baseline) bool { return p.preempt1m*60 > 1 && p.kvAvg < 0.9 },
	RuleQueueWithFreeCache:    func(p point, _ baseline) bool { return p.waitRatio > 0.2 && p.kv < 0.7 },
	RuleEngineStalled:         func(p point, _ baseline) bool { return p.work > 0 && p.steps == 0 && p.generated == 0 },
	RuleQueueDeferred:         func(p point, _ baseline) bool { return p.deferRatio > 0.2 && p.kv < 0.85 },
	RulePastTheKnee:           func(p point, _ baseline) bool { return p.waitRatio > 0.2 && p.kv >= 0.85 },
	RuleClientTimeouts:        func(p point, _ baseline) bool { return p.abortRatio > 0.05 },
	RuleOutputsTruncated: func(p point, b baseline) bool {
		return p.lengthRatio > 0.2 && p.lengthRatio >= 1.5*b.lengthRatio
	},
	RulePrefillBound: func(p point, b baseline) bool {
		return p.n >= minRequests && p.p99[0] >= 2*b.p99[1] && p.prefill >= 1.5*b.prefill
	},
	RuleDecodeBound: func(p point, b baseline) bool {
		return p.n >= minRequests && p.itl99[0] >= 2*b.itl99[1] && p.decode >= 1.5*b.decode
	},
}

// ruleFor is each rule's `for` duration.
var ruleFor = map[string]time.Duration{RuleKVCacheSaturated: 3 * time.Minute, RuleEngineStalled: 90 * time.Second}

func forDuration(rule string) time.Duration {
	if d, ok := ruleFor[rule]; ok {
		return d
	}
	return 5 * time.Minute
}

// firing returns the intervals where rule's condition held for at least its `for` duration.
func firing(rule string, pts []point, b baseline, step time.Duration) [][2]time.Time {
	var out [][2]time.Time
	var start time.Time
	on := false
	flush := func(end time.Time) {
		if on && end.Sub(start) >= forDuration(rule) {
			out = append(out, [2]time.Time{start, end})
		}
		on = false
	}
	for _, p := range pts {
		if conditions[rule](p, b) {
			if !on {
				start, on = p.at, true
			}
			continue
		}
		flush(p.at)
	}
	if len(pts) > 0 {
		flush(pts[len(pts)-1].at.Add(step))
	}
	return out
}

// table prints the signals minute by minute, for failure messages.
func table(pts []point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %5s %-13s %-13s %-13s %5s %5s %6s %6s %5s %5s %6s %6s %6s\n",
		"time", "n", "p50", "p99", "itl99", "kv", "wait", "pre/s", "abort", "hit", "acc", "queue", "prefil", "decode")
	for i, p := range pts {
		if i%4 != 0 {
			continue
		}
		fmt.Fprintf(&b, "%-8s %5.0f %-13s %-13s %-13s %5.2f %5.2f %6.2f %6.2f %5.2f %5.2f %6.2f %6.2f %6.2f\n",
			p.at.Format("15:04:05"), p.n, iv(p.p50), iv(p.p99), iv(p.itl99), p.kv, p.waitRatio, p.preempt1m,
			p.abortRatio, p.hitRate, p.acceptance, p.queue, p.prefill, p.decode)
	}
	return b.String()
}

func iv(x [2]float64) string { return fmt.Sprintf("(%g,%g]", x[0], x[1]) }
