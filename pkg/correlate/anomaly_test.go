package correlate

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/traces"
)

// window returns n ordinary requests: TTFT linear in the prompt length with a little jitter,
// queue a small part of e2e, 20 ms per output token.
func window(n int) []traces.Request {
	out := make([]traces.Request, n)
	for i := range out {
		prompt := 100 + 40*i
		jitter := 0.004 * float64(i%5-2)
		r := request(keyA, at(0).Add(time.Duration(i)*time.Second), at(0).Add(time.Duration(i)*time.Second+4*time.Second))
		r.PromptTokens, r.OutputTokens = int64(prompt), 101
		r.TTFT = 0.05 + 0.0001*float64(prompt) + jitter
		r.Queue, r.Prefill, r.Decode = 0.01, r.TTFT-0.01, 2.0+jitter
		r.E2E = r.TTFT + r.Decode + 0.01
		out[i] = r
	}
	return out
}

func TestAnomalyReasons(t *testing.T) {
	base := window(200)
	cases := []struct {
		name   string
		change func(r *traces.Request)
		want   []ReasonCode
	}{
		{"ordinary", func(*traces.Request) {}, nil},
		{"TTFT far above everything", func(r *traces.Request) { r.TTFT = 5 }, []ReasonCode{TTFTAbovePercentile, TTFTVsPrompt}},
		{"TTFT ordinary overall but high for a short prompt", func(r *traces.Request) { r.PromptTokens, r.TTFT = 100, 0.3 }, []ReasonCode{TTFTVsPrompt}},
		{"queue over half of e2e", func(r *traces.Request) { r.Queue, r.E2E = 3, 5 }, []ReasonCode{QueueOverHalf}},
		{"queue over half but tiny", func(r *traces.Request) { r.Queue, r.E2E = 0.05, 0.08 }, nil},
		{"slow decode per token", func(r *traces.Request) { r.Decode = 10 * 2.0 }, []ReasonCode{SlowDecode}},
		{"decode of one token is not per-token", func(r *traces.Request) { r.Decode, r.OutputTokens = 20, 1 }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs := slices.Clone(base)
			probe := &reqs[len(reqs)/2]
			c.change(probe)
			res := Join(Input{Requests: reqs}, Options{})
			var got []ReasonCode
			for _, r := range res.Rows[len(reqs)/2].Reasons {
				got = append(got, r.Code)
				if r.Text() == "" || r.Text() == string(r.Code) {
					t.Errorf("reason %s has no text", r.Code)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("reasons %v, want %v", got, c.want)
			}
			// By its definition the p99 leaves the window's slowest 1% above it; nothing else
			// of an ordinary request is flagged.
			aboveP99 := 0
			for i, row := range res.Rows {
				for _, r := range row.Reasons {
					switch {
					case i == len(reqs)/2:
					case r.Code == TTFTAbovePercentile:
						aboveP99++
					default:
						t.Fatalf("ordinary request %d flagged: %v", i, r)
					}
				}
			}
			if limit := len(reqs) / 100; aboveP99 > limit {
				t.Fatalf("%d ordinary requests above the p99, want at most %d", aboveP99, limit)
			}
		})
	}
}

func TestTooFewRequestsFlagNothingAndSaySo(t *testing.T) {
	reqs := window(DefaultMinRequests - 1)
	reqs[3].TTFT, reqs[4].Decode = 9, 200
	res := Join(Input{Requests: reqs}, Options{})
	for _, row := range res.Rows {
		for _, r := range row.Reasons {
			if r.Code != QueueOverHalf {
				t.Fatalf("reason %s flagged from a window of %d requests", r.Code, len(reqs))
			}
		}
	}
	notes := strings.Join(res.Notices, "\n")
	if !strings.Contains(notes, "TTFT p99") || !strings.Contains(notes, "decode time per token") {
		t.Fatalf("notices %q should say the window statistics need more requests", notes)
	}
}

func TestWindowFitRecoversTheLine(t *testing.T) {
	reqs := window(200)
	w := Join(Input{Requests: reqs}, Options{}).Window
	if w.Slope < 0.00009 || w.Slope > 0.00011 || w.Intercept < 0.045 || w.Intercept > 0.055 {
		t.Fatalf("fit TTFT ≈ %v + %v·prompt, want about 0.05 + 0.0001·prompt", w.Intercept, w.Slope)
	}
	if w.FitN != len(reqs) || w.TTFTN != len(reqs) || w.DecodeN != len(reqs) {
		t.Fatalf("counts %d, %d, %d; want %d each", w.FitN, w.TTFTN, w.DecodeN, len(reqs))
	}
}

func TestNthAgreesWithSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 3, 10, 101, 1000} {
		for _, distinct := range []int{2, 1000} {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(rng.IntN(distinct))
			}
			sorted := slices.Clone(v)
			slices.Sort(sorted)
			for _, k := range []int{0, n / 2, nearestRank(n, 0.99), n - 1} {
				if got := nth(slices.Clone(v), k); got != sorted[k] {
					t.Fatalf("n=%d, %d distinct values: nth(%d) = %v, sorting gives %v", n, distinct, k, got, sorted[k])
				}
			}
			wantMedian := sorted[n/2]
			if n%2 == 0 {
				wantMedian = (sorted[n/2-1] + sorted[n/2]) / 2
			}
			if got := median(slices.Clone(v)); got != wantMedian {
				t.Fatalf("n=%d: median %v, want %v", n, got, wantMedian)
			}
		}
	}
}
