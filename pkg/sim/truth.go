package sim

import (
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// The ground truth of a fault is where the model's own state shows the fault's mechanism,
// judged over a trailing minute of engine windows (as a 1m rate window would see it), then
// merged across short gaps and kept when it lasts long enough for a rule's `for`.
const (
	truthWindow  = 60.0  // seconds of state each judgement covers
	truthMaxGap  = 120.0 // closer intervals merge
	truthMinSpan = 120.0 // shorter ones are dropped
)

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func waitRatio(a window) float64 {
	if a.running+a.waiting == 0 {
		return 0
	}
	return a.waiting / (a.running + a.waiting)
}

// truth finds, for each fault of the instance, the intervals where its mechanism was at work.
func truth(s *instanceSim, start time.Time, duration float64) []Finding {
	var out []Finding
	per := int(truthWindow / s.scrape)
	for _, f := range s.in.Faults {
		rule := f.Rule
		if v0 := faults[rule].v0Rule; v0 != "" && s.scen.generation() == vllm.GenerationV0 {
			rule = v0
		}
		check := faults[rule].mechanism
		if check == nil {
			continue
		}
		var base window
		for k := 0; k < len(s.windows) && float64(k+1)*s.scrape <= f.From*duration; k++ {
			base.add(s.windows[k])
		}
		maxGap, minSpan := truthMaxGap, truthMinSpan
		var spans [][2]float64
		for k := per - 1; k < len(s.windows); k++ {
			var a window
			for j := k - per + 1; j <= k; j++ {
				a.add(s.windows[j])
			}
			if a.span < truthWindow/2 || !check(a, base) {
				continue
			}
			at := min(float64(k+1)*s.scrape, duration)
			from, to := at, at
			if n := len(spans); n > 0 && from-spans[n-1][1] <= maxGap {
				spans[n-1][1] = to
			} else {
				spans = append(spans, [2]float64{from, to})
			}
		}
		for _, sp := range spans {
			// Only what the fault caused: an interval must overlap the fault.
			if sp[1]-sp[0] < minSpan || sp[1] <= f.From*duration || sp[0] >= f.To*duration+maxGap {
				continue
			}
			out = append(out, Finding{
				Rule: rule, Instance: s.in.Address, Model: s.in.Model,
				Start: start.Add(time.Duration(sp[0] * float64(time.Second))),
				End:   start.Add(time.Duration(sp[1] * float64(time.Second))),
			})
		}
	}
	return out
}
