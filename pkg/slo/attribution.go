package slo

import (
	"math"
	"sort"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// NoFinding is the rule of the attribution row of misses while no finding was active.
const NoFinding = "none"

// Share is the misses of one key's objective that happened while one finding was active.
type Share struct {
	// Rule is the finding's rule, or NoFinding; From and To its interval (zero for NoFinding).
	Rule     string
	From, To time.Time
	// Bad is the misses attributed to the finding; Share their part of all the key's misses.
	Bad   float64
	Share float64
}

// Attribute splits a key's misses over steps from to to among the findings of that key active
// at each step (Start ≤ t ≤ End). The misses of a step are its events above the lower bucket
// bound (Total − GoodLow): exact when the threshold is a bucket bound, else at most the
// misses. A finding explained by another active one (SecondaryTo names its rule) cedes its
// part to it; the others active at a step share its misses equally. Misses with no finding
// active make the NoFinding row. Rows with misses are sorted by share, largest first.
func Attribute(e Events, g series.Grid, from, to int, key series.Key, findings []diagnosis.Finding) []Share {
	var mine []diagnosis.Finding
	for _, f := range findings {
		if f.Key.Instance == key.Instance && (f.Key.Model == "" || f.Key.Model == key.Model) {
			mine = append(mine, f)
		}
	}
	bad := make([]float64, len(mine))
	var none, all float64
	for i := max(from, 0); i <= to && i < len(e.Total); i++ {
		miss := e.Total[i] - e.GoodLow[i]
		if math.IsNaN(miss) || miss <= 0 {
			continue
		}
		all += miss
		active := activeAt(mine, g.Time(i))
		if len(active) == 0 {
			none += miss
			continue
		}
		for _, j := range active {
			bad[j] += miss / float64(len(active))
		}
	}
	if all == 0 {
		return nil
	}
	var out []Share
	for j, f := range mine {
		if bad[j] > 0 {
			out = append(out, Share{Rule: f.Rule, From: f.Start, To: f.End, Bad: bad[j], Share: bad[j] / all})
		}
	}
	if none > 0 {
		out = append(out, Share{Rule: NoFinding, Bad: none, Share: none / all})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Share > out[b].Share })
	return out
}

// activeAt returns the indexes of the findings active at t that no other active finding
// explains.
func activeAt(fs []diagnosis.Finding, t time.Time) []int {
	rules := map[string]bool{}
	var on []int
	for j, f := range fs {
		if !t.Before(f.Start) && !t.After(f.End) {
			on = append(on, j)
			rules[f.Rule] = true
		}
	}
	out := on[:0:0]
	for _, j := range on {
		if s := fs[j].SecondaryTo; s != "" && s != fs[j].Rule && rules[s] {
			continue
		}
		out = append(out, j)
	}
	return out
}
