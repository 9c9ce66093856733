package correlate

import (
	"math"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
)

// TestExplainNamesTheRecommendedValue: a finding with a recommendation adds it to the sentence;
// one whose value could not be had leaves the sentence with its action alone.
func TestExplainNamesTheRecommendedValue(t *testing.T) {
	// 4000 × 16 = 64000 tokens; 0.5 × 64000 / 24 = 1333 tokens per request; 0.9 × 64000 / 1333 = 43.
	rec := diagnosis.KVFit(diagnosis.KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "auto", Usage: 0.5, Running: 24, PromptMean: 1000, OutputMean: 600})
	for _, c := range []struct {
		name string
		rec  diagnosis.Recommendation
		want bool
	}{{"with a value", rec, true}, {"without", diagnosis.KVFit(diagnosis.KVInput{}), false}} {
		t.Run(c.name, func(t *testing.T) {
			f := &diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: keyA, Action: "lower --max-num-seqs", Recommendation: c.rec}
			r := request(keyA, at(0), at(1))
			r.Queue, r.Prefill, r.Decode, r.E2E = 3.1, 1, 0.8, 5
			e := Explain(Row{Request: r, Findings: []*diagnosis.Finding{f}, DecodePerToken: math.NaN(), Reasons: []Reason{{Code: QueueOverHalf}}})
			if got := strings.Contains(e.Sentence, "Recommendation: set --max-num-seqs to 43 as a target"); got != c.want {
				t.Errorf("sentence %q: recommendation shown %v, want %v", e.Sentence, got, c.want)
			}
		})
	}
}
