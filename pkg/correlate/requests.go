package correlate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// WithMetrics sets the metric side of a requests query's join from its diagnosis: the set, its
// findings and each instance's typical TTFT over [in.From, in.To]. err says why the metrics
// could not be read; the side then stays empty. The notices say what the join lacks: all of
// the metric side, or the joined signals the set has not.
func (in *Input) WithMetrics(set *series.Set, findings []diagnosis.Finding, err error) []string {
	if err != nil {
		return []string{"The metrics could not be read, so requests are shown without their metric state, findings and ranking: " + err.Error()}
	}
	in.Set, in.Findings = set, findings
	in.Typical = TypicalTTFT(set, in.From, in.To)
	var notices []string
	for _, js := range series.Joined {
		if reason, ok := set.Absent[js.Signal]; ok {
			notices = append(notices, string(js.Signal)+" is not joined: "+reason)
		}
	}
	return notices
}

// Selection is what a requests query keeps of its join's rows, and what its searches asked.
type Selection struct {
	// Model keeps the rows whose model it matches, once the join has given a model to the
	// requests whose span carries none (their instance's only one); a row whose model stays
	// unknown is kept. Nil keeps every model.
	Model func(model string) bool
	// AnomalousOnly keeps the rows with at least one reason.
	AnomalousOnly bool
	// Limit bounds the rows: the ones that stand out most are kept, and a notice says so
	// (≤ 0 keeps all).
	Limit int
	// MinTTFT is the least TTFT the searches asked for, in seconds (0: any), said beside the
	// coverage since it is a share of the requests with such a TTFT.
	MinTTFT float64
}

// Requests answers a requests query: it joins in, keeps the selection's rows, ranks them
// (Rank) and cuts them at the limit. The notices come in the order a user reads them: the
// coverage first (with the instances whose share differs from the whole's), then notices
// (what the caller has to say first: the metrics, the plan, the searches), then the join's,
// then the limit's.
func Requests(in Input, sel Selection, notices []string) ([]Row, []string) {
	res := Join(in, Options{})
	cov := res.Coverage.Text()
	if sel.MinTTFT > 0 {
		cov += fmt.Sprintf(" (only spans with TTFT ≥ %g s were asked for)", sel.MinTTFT)
	}
	if by := instanceCoverage(in, res.Coverage); by != "" {
		cov += "; " + by
	}
	out := slices.Concat([]string{cov}, notices, res.Notices)
	rows := res.Rows[:0]
	for _, r := range res.Rows {
		if r.Model != "" && sel.Model != nil && !sel.Model(r.Model) {
			continue
		}
		if sel.AnomalousOnly && len(r.Reasons) == 0 {
			continue
		}
		rows = append(rows, r)
	}
	Rank(rows)
	if sel.Limit > 0 && len(rows) > sel.Limit {
		out = append(out, fmt.Sprintf("%d requests were examined; the %d that stand out most from their instance's typical TTFT are shown.", len(rows), sel.Limit))
		rows = rows[:sel.Limit]
	}
	return rows, out
}

// instanceCoverage names the instances whose share of requests examined differs from the
// whole's by more than a factor of two, with their shares; empty when none does.
func instanceCoverage(in Input, all Coverage) string {
	if !all.Known() || all.Finished <= 0 {
		return ""
	}
	whole := float64(all.Spans) / all.Finished
	by := CoverageByInstance(in)
	var parts []string
	for _, inst := range slices.Sorted(maps.Keys(by)) {
		c := by[inst]
		if !c.Known() || c.Finished <= 0 {
			continue
		}
		share := float64(c.Spans) / c.Finished
		if share > 2*whole || share < whole/2 {
			parts = append(parts, fmt.Sprintf("%s %.1f%% (%d of %.0f)", inst, 100*share, c.Spans, c.Finished))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f%% of the range's requests were examined overall; where it differs, per instance: %s", 100*whole, strings.Join(parts, ", "))
}
