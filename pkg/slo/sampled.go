package slo

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Sample is one sampled request as its span says it: the key whose series count it (its
// instance and model), when it finished, and what Judge reads.
type Sample struct {
	Key     series.Key
	End     time.Time
	Request Request
}

// Sampled is one key's sampled requests, per step of a goodput's grid (Goodput.From on): Spans
// is how many were judged at each step (those that finished in the step ending at it, as the
// goodput's point counts them), Share the share of them that were served and met every
// per-request objective of their model (NaN where none was judged).
type Sampled struct {
	Share, Spans []float64
}

// Unjudged counts the sampled requests left out of the shares, by why (Judgement.Why, or the
// sample's key having no goodput series).
type Unjudged map[string]int

// SampledGoodput judges the samples against the per-request objectives of their model and
// served (finished without abort or error), as Goodputs joins them, and fills each goodput
// series' Share, Spans and FromSpans over its steps; a fleet series' shares are its model's
// samples together. A sample whose span lacks what an objective measures is judged neither
// good nor bad: it is left out of the shares and counted in unjudged. FromSpans is the share
// times the requests per second vLLM traces, those finished without abort (vLLM traces no
// aborted request): the set's request rate less its aborted share.
func SampledGoodput(objectives []Objective, samples []Sample, rows []Goodput, set *series.Set) Unjudged {
	var joined []Objective
	for _, o := range objectives {
		if o.PerRequest() {
			joined = append(joined, o)
		}
	}
	joined = append(joined, served)
	type tally struct{ good, all []float64 }
	tallies := map[series.Key]*tally{}
	index := map[series.Key]int{}
	for i, r := range rows {
		index[r.Key] = i
		tallies[r.Key] = &tally{make([]float64, len(r.Low)), make([]float64, len(r.Low))}
	}
	unjudged := Unjudged{}
	for _, s := range samples {
		i, ok := index[s.Key]
		if !ok || s.Key.Instance == Fleet {
			unjudged[fmt.Sprintf("no goodput series of %s (%s) in the metrics", s.Key.Instance, s.Key.Model)]++
			continue
		}
		r := rows[i]
		// The point at From + k×Step counts the requests that finished in the step ending at it.
		k := int(math.Ceil(float64(s.End.Sub(r.From)) / float64(r.Step)))
		if k < 0 || k >= len(r.Low) {
			continue
		}
		good, why := true, ""
		s.Request.Model = s.Key.Model
		for _, j := range Judge(joined, s.Request) {
			switch j.Outcome {
			case Unknown:
				why = j.Why
			case Missed:
				good = false
			}
		}
		if why != "" {
			unjudged[why]++
			continue
		}
		for _, key := range []series.Key{s.Key, {Instance: Fleet, Model: s.Key.Model}} {
			if t, ok := tallies[key]; ok {
				t.all[k]++
				if good {
					t.good[k]++
				}
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		t := tallies[r.Key]
		r.Spans, r.Share, r.FromSpans = t.all, series.NaNs(len(t.all)), series.NaNs(len(t.all))
		start, _ := set.Grid.Index(r.From)
		keys := instancesOf(set, r.Key)
		for k, n := range t.all {
			if n == 0 {
				continue
			}
			r.Share[k] = t.good[k] / n
			r.FromSpans[k] = r.Share[k] * tracedRate(set, keys, start+k)
		}
	}
	return unjudged
}

// instancesOf are the keys a goodput key's requests are read from: itself, or a fleet key's
// model's instances.
func instancesOf(set *series.Set, k series.Key) []series.Key {
	if k.Instance != Fleet {
		return []series.Key{k}
	}
	var keys []series.Key
	for _, key := range set.Keys() {
		if key.Model == k.Model && key.Instance != Fleet {
			keys = append(keys, key)
		}
	}
	return keys
}

// tracedRate is the requests per second of keys at a step of the set that finished without
// abort, added up; NaN without the request rate.
func tracedRate(set *series.Set, keys []series.Key, i int) float64 {
	sum, found := 0.0, false
	for _, key := range keys {
		rate := set.Value(key, series.RequestRate, i)
		if math.IsNaN(rate) {
			continue
		}
		sum += rate * math.Max(0, 1-orZero(set.Value(key, series.AbortRatio, i)))
		found = true
	}
	if !found {
		return math.NaN()
	}
	return sum
}

// Reasons lists the counts of unjudged as "n (why)", most first, for a notice.
func (u Unjudged) Reasons() []string {
	type reason struct {
		why string
		n   int
	}
	var rs []reason
	for why, n := range u {
		rs = append(rs, reason{why, n})
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].n > rs[b].n || (rs[a].n == rs[b].n && rs[a].why < rs[b].why) })
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%d (%s)", r.n, r.why)
	}
	return out
}
