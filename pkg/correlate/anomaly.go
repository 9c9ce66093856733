package correlate

import (
	"fmt"
	"math"
	"slices"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// ReasonCode names why a request stands out in its window.
type ReasonCode string

// The reasons (see the package documentation for their rules).
const (
	TTFTAbovePercentile ReasonCode = "ttft_above_p99"
	QueueOverHalf       ReasonCode = "queue_over_half"
	TTFTVsPrompt        ReasonCode = "ttft_vs_prompt"
	SlowDecode          ReasonCode = "slow_decode"
	TTFTAboveTypical    ReasonCode = "ttft_above_typical"
)

// Reason is one anomaly of a request, with the numbers behind it (its text is written only
// when asked for: most reasons of a large window are never shown).
type Reason struct {
	Code ReasonCode
	// Value is the request's value: TTFT, queue time, TTFT, or decode time per token (seconds).
	Value float64
	// Reference is what it was compared with: the window's p99, the request's e2e, the fit's
	// prediction, or the window's median decode time per token.
	Reference float64
	// Scale is the window's request count (p99), the residual's robust scale (fit), or the
	// factor over the median (decode).
	Scale float64
	// Prompt is the request's prompt length (fit).
	Prompt int64
}

// Text says the reason in words.
func (r Reason) Text() string {
	switch r.Code {
	case TTFTAbovePercentile:
		return fmt.Sprintf("TTFT %s is above the window's p99 of %s (%.0f requests)", secs(r.Value), secs(r.Reference), r.Scale)
	case QueueOverHalf:
		return fmt.Sprintf("waited %s in the queue, %s of its %s end to end", secs(r.Value), pct(r.Value/r.Reference), secs(r.Reference))
	case TTFTVsPrompt:
		return fmt.Sprintf("TTFT %s for %d prompt tokens, where the window's fit expects %s (%.1f robust scales above it)",
			secs(r.Value), r.Prompt, secs(r.Reference), (r.Value-r.Reference)/r.Scale)
	case SlowDecode:
		return fmt.Sprintf("decoded at %s per token, %.1f× the window's median of %s", secs(r.Value), r.Value/r.Reference, secs(r.Reference))
	case TTFTAboveTypical:
		return fmt.Sprintf("TTFT %s is %.0f× its instance's typical %s over the range (TTFT p50 of the metrics)", secs(r.Value), r.Value/r.Reference, secs(r.Reference))
	}
	return string(r.Code)
}

// WindowStats are the statistics of the window's requests that the reasons compare with; NaN
// (and N below Options.MinRequests) when too few requests carry the values.
type WindowStats struct {
	// TTFTP99 is the nearest-rank p99 of TTFT over TTFTN requests.
	TTFTP99 float64
	TTFTN   int
	// Intercept and Slope fit TTFT ≈ Intercept + Slope·prompt_tokens over FitN requests;
	// ResidualScale is 1.4826 × the median absolute deviation of the residuals (≥ 1 ms).
	Intercept, Slope, ResidualScale float64
	FitN                            int
	// DecodePerTokenMedian is the median decode time per output token over DecodeN requests.
	DecodePerTokenMedian float64
	DecodeN              int
}

// minResidualScale keeps a window of identical requests from flagging rounding noise.
const minResidualScale = 1e-3

// windowValues gathers, row by row, the values the window's statistics are taken from.
type windowValues struct {
	ttfts, xs, ys, per []float64
}

func newWindowValues(n int) windowValues {
	return windowValues{ttfts: make([]float64, 0, n), xs: make([]float64, 0, n), ys: make([]float64, 0, n), per: make([]float64, 0, n)}
}

func (v *windowValues) add(r *Row) {
	if r.Present.Has(traces.FieldTTFT) {
		v.ttfts = append(v.ttfts, r.TTFT)
		if r.Present.Has(traces.FieldPromptTokens) {
			v.xs = append(v.xs, float64(r.PromptTokens))
			v.ys = append(v.ys, r.TTFT)
		}
	}
	if !math.IsNaN(r.DecodePerToken) {
		v.per = append(v.per, r.DecodePerToken)
	}
}

// stats computes the statistics; it reorders the gathered values.
func (v *windowValues) stats(o Options) WindowStats {
	w := WindowStats{TTFTP99: math.NaN(), Intercept: math.NaN(), Slope: math.NaN(), ResidualScale: math.NaN(), DecodePerTokenMedian: math.NaN()}
	ttfts, xs, ys, per := v.ttfts, v.xs, v.ys, v.per
	w.TTFTN, w.FitN, w.DecodeN = len(ttfts), len(xs), len(per)
	if len(ttfts) >= o.MinRequests {
		w.TTFTP99 = nth(ttfts, nearestRank(len(ttfts), 0.99))
	}
	if len(per) >= o.MinRequests {
		w.DecodePerTokenMedian = median(per)
	}
	if len(xs) >= o.MinRequests {
		w.Intercept, w.Slope = leastSquares(xs, ys)
		// The residuals replace the TTFTs, no longer needed once the p99 is taken.
		res := ttfts[:len(xs)]
		for i := range xs {
			res[i] = ys[i] - (w.Intercept + w.Slope*xs[i])
		}
		m := median(res)
		for i := range res {
			res[i] = math.Abs(res[i] - m)
		}
		w.ResidualScale = math.Max(1.4826*median(res), minResidualScale)
	}
	return w
}

// nearestRank is the index of quantile q among n sorted values.
func nearestRank(n int, q float64) int {
	return max(int(math.Ceil(q*float64(n)))-1, 0)
}

// median reorders v and returns its median, in linear time.
func median(v []float64) float64 {
	n := len(v)
	hi := nth(v, n/2)
	if n%2 == 1 {
		return hi
	}
	// After nth, the lower half holds the values up to v[n/2]: its maximum is the other middle.
	return (slices.Max(v[:n/2]) + hi) / 2
}

// nth reorders v so that v[k] is the value a sort would put there, everything before it no
// larger and everything after it no smaller (quickselect, median-of-three pivots), and returns
// it. Linear time on average; v holds no NaN.
func nth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// leastSquares fits y ≈ a + b·x; with every x equal the slope is 0 and a the mean.
func leastSquares(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		dx := xs[i] - mx
		sxy += dx * (ys[i] - my)
		sxx += dx * dx
	}
	if sxx > 0 {
		b = sxy / sxx
	}
	return my - b*mx, b
}

// standout sets a row's Standout from its instance's typical TTFT, and flags it at or above
// factor times it.
func (ix *instanceIndex) standout(r *Row, id int32, factor float64) {
	r.Standout = math.NaN()
	t := ix.typical[id]
	if math.IsNaN(t) || t <= 0 || !r.Present.Has(traces.FieldTTFT) {
		return
	}
	r.Standout = r.TTFT / t
	if r.Standout >= factor {
		r.Reasons = append(r.Reasons, Reason{Code: TTFTAboveTypical, Value: r.TTFT, Reference: t, Scale: factor})
	}
}

// flag gives each row its reasons, and says which reasons could not be tested.
func flag(rows []Row, w WindowStats, o Options) []string {
	for i := range rows {
		r := &rows[i]
		if !math.IsNaN(w.TTFTP99) && r.Present.Has(traces.FieldTTFT) && r.TTFT > w.TTFTP99 {
			r.Reasons = append(r.Reasons, Reason{Code: TTFTAbovePercentile, Value: r.TTFT, Reference: w.TTFTP99, Scale: float64(w.TTFTN)})
		}
		if r.Present.Has(traces.FieldQueue) && r.Present.Has(traces.FieldE2E) && r.Queue >= o.MinQueue && r.Queue > r.E2E/2 {
			r.Reasons = append(r.Reasons, Reason{Code: QueueOverHalf, Value: r.Queue, Reference: r.E2E})
		}
		if !math.IsNaN(w.Slope) && r.Present.Has(traces.FieldTTFT) && r.Present.Has(traces.FieldPromptTokens) {
			want := w.Intercept + w.Slope*float64(r.PromptTokens)
			if r.TTFT-want > o.ResidualFactor*w.ResidualScale {
				r.Reasons = append(r.Reasons, Reason{Code: TTFTVsPrompt, Value: r.TTFT, Reference: want, Scale: w.ResidualScale, Prompt: r.PromptTokens})
			}
		}
		if !math.IsNaN(w.DecodePerTokenMedian) && !math.IsNaN(r.DecodePerToken) && r.DecodePerToken > o.DecodeFactor*w.DecodePerTokenMedian {
			r.Reasons = append(r.Reasons, Reason{Code: SlowDecode, Value: r.DecodePerToken, Reference: w.DecodePerTokenMedian})
		}
	}
	var notes []string
	if len(rows) > 0 && (w.TTFTN < o.MinRequests || w.FitN < o.MinRequests) {
		notes = append(notes, fmt.Sprintf("only %d request(s) with a TTFT (%d with a prompt length): at least %d are needed for the window's TTFT p99 and prompt-length fit, so those anomalies are not flagged",
			w.TTFTN, w.FitN, o.MinRequests))
	}
	if len(rows) > 0 && w.DecodeN < o.MinRequests {
		notes = append(notes, fmt.Sprintf("only %d request(s) with a decode time and more than one output token: at least %d are needed for the window's median decode time per token, so slow decoding is not flagged",
			w.DecodeN, o.MinRequests))
	}
	return notes
}

// secs writes seconds for a sentence: 3 significant digits, in ms below one second.
func secs(v float64) string {
	switch {
	case math.Abs(v) < 1:
		return series.Format("%.3g ms", v*1000)
	case math.Abs(v) >= 100:
		return series.Format("%.0f s", v)
	}
	return series.Format("%.3g s", v)
}

func pct(v float64) string { return series.Format("%.0f%%", 100*v) }
