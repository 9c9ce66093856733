package series

import (
	"fmt"
	"math"
	"time"
)

// MinRequests is the fewest requests a window needs for a quantile or a per-request statistic
// to count (README, The diagnosis matrix): the diagnosis's quantile rules, the requests' window
// statistics and the verdicts all hold to it, and below it report insufficient data.
const MinRequests = 20

// Missing is how every text writes a value that is not there: no sample at that step, no data
// in the window, or a ratio over zero.
const Missing = "n/a"

// Format writes a measured value for a sentence with a fmt verb such as "%.3g s" or "%.0f%%";
// Missing when the value is NaN or infinite. It is the one place where numbers become text, so
// findings, explanations and verdicts say a missing value the same way.
func Format(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Missing
	}
	return fmt.Sprintf(format, v)
}

// Stamp is how every text writes a time: RFC 3339, in UTC.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// NaNs returns n NaN values: a series' steps before any sample is placed.
func NaNs(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}
