package slo

import (
	"math"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Goodput is one key's requests per second that met every objective of its model (Instance
// Fleet: a model's instances added up), bounded at each step: from histograms the requests
// that met one objective are not those that met another, so the joint share of n objectives
// whose shares are a_i lies between max(0, Σa_i − (n − 1)) and min(a_i) (each a_i itself
// between its good events' bounds). NaN marks a step without data.
type Goodput struct {
	Key series.Key
	// Objectives are the names of the objectives joined.
	Objectives []string
	// From is the time of the first step, Step the grid's step.
	From      time.Time
	Step      time.Duration
	Low, High []float64
	// Share and Spans are the sampled requests' joint share and how many spans it rests on at
	// each step, FromSpans the goodput they give (SampledGoodput); nil when no span was read.
	Share, Spans, FromSpans []float64
}

// PerRequest reports whether an objective judges each request: an inter-token latency is one
// observation per output token, so a request's tokens cannot be told apart in the histogram
// and it is no per-request objective (goodput leaves it out).
func (o Objective) PerRequest() bool { return o.Indicator != ITL }

// served is what goodput asks of every request besides the objectives: to finish without abort
// or error, as a served request does (an aborted request met no latency objective it was not
// observed by).
var served = Objective{Name: "served", Indicator: Availability}

// Goodputs are the goodput series of every key that a per-request objective applies to, over
// the steps of the set's grid from `from` on, then a fleet series per model; leftOut are the
// objectives goodput cannot join (PerRequest). Every request counted finished without abort or
// error (the set's availability signals), an availability objective or not.
func Goodputs(objectives []Objective, set *series.Set, from time.Time) (out []Goodput, leftOut []Objective) {
	var joined []Objective
	for _, o := range objectives {
		if o.PerRequest() {
			joined = append(joined, o)
		} else {
			leftOut = append(leftOut, o)
		}
	}
	start := rangeFrom(set.Grid, from)
	var keys []series.Key
	seen := map[series.Key]bool{}
	for _, o := range joined {
		for _, k := range keysOf(o, set) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		return keys[a].Instance < keys[b].Instance || (keys[a].Instance == keys[b].Instance && keys[a].Model < keys[b].Model)
	})
	byModel := map[string][]Goodput{}
	var models []string
	for _, k := range keys {
		var names []string
		var events []Events
		requests := -1
		for _, o := range joined {
			if e, ok := eventsOf(o, set, k); ok && o.Matches(k.Model) {
				if o.Family == "" {
					requests = len(events)
				}
				names = append(names, o.Name)
				events = append(events, e)
			}
		}
		if e, ok := eventsOf(served, set, k); ok && requests < 0 {
			requests = len(events)
			events = append(events, e)
		}
		g := goodputOf(events, requests, start, set.Grid.Step)
		g.Key, g.Objectives, g.From, g.Step = k, names, set.Grid.Time(start), set.Grid.Step
		out = append(out, g)
		if _, ok := byModel[k.Model]; !ok {
			models = append(models, k.Model)
		}
		byModel[k.Model] = append(byModel[k.Model], g)
	}
	for _, m := range models {
		out = append(out, fleetGoodput(m, byModel[m]))
	}
	return out, leftOut
}

// goodputOf bounds the requests per second that met every objective whose events are given,
// from step `from` on. The requests of a step are the finished ones: the events of
// events[requests], or without them (requests < 0) the most events any objective counted. An
// objective without events at a step missed none of its requests.
func goodputOf(events []Events, requests int, from int, step time.Duration) Goodput {
	n := 0
	if len(events) > 0 {
		n = len(events[0].Total)
	}
	g := Goodput{Low: series.NaNs(max(n-from, 0)), High: series.NaNs(max(n-from, 0))}
	secs := step.Seconds()
	for i := from; i < n; i++ {
		finished, sumLow, minHigh, gap := 0.0, 0.0, 1.0, false
		for _, e := range events {
			if math.IsNaN(e.Total[i]) {
				gap = true
				break
			}
			finished = math.Max(finished, e.Total[i])
		}
		if gap {
			continue
		}
		if requests >= 0 {
			finished = events[requests].Total[i]
		}
		for _, e := range events {
			low, high := 1.0, 1.0
			if e.Total[i] > 0 {
				low, high = e.GoodLow[i]/e.Total[i], e.GoodHigh[i]/e.Total[i]
			}
			sumLow += low
			minHigh = math.Min(minHigh, high)
		}
		joint := math.Max(0, sumLow-float64(len(events)-1))
		g.Low[i-from], g.High[i-from] = joint*finished/secs, minHigh*finished/secs
	}
	return g
}

// fleetGoodput adds up a model's instances' goodput: the bounds of a sum are the sums of the
// bounds. A step is a gap only when every instance has one.
func fleetGoodput(model string, parts []Goodput) Goodput {
	n := len(parts[0].Low)
	g := Goodput{Key: series.Key{Instance: Fleet, Model: model}, From: parts[0].From, Step: parts[0].Step, Low: series.NaNs(n), High: series.NaNs(n)}
	names := map[string]bool{}
	for _, p := range parts {
		for _, o := range p.Objectives {
			if !names[o] {
				names[o] = true
				g.Objectives = append(g.Objectives, o)
			}
		}
		for i := range n {
			if math.IsNaN(p.Low[i]) {
				continue
			}
			if math.IsNaN(g.Low[i]) {
				g.Low[i], g.High[i] = 0, 0
			}
			g.Low[i] += p.Low[i]
			g.High[i] += p.High[i]
		}
	}
	return g
}
