package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
)

// describers write what a window measured for an optimisation, in the row's baseline and
// current fields.
var describers = map[Optimisation]func(Stats) string{
	ChunkedPrefill: func(s Stats) string {
		return fmt.Sprintf("TTFT p99 %s, p50 %s, p99/p50 %s", seconds(s.TTFTP99), seconds(s.TTFTP50), plain(ratio(s.TTFTP99, s.TTFTP50)))
	},
	PrefixCaching: func(s Stats) string {
		out := fmt.Sprintf("hit rate %s, TTFT p50 %s", num(s.HitRate), seconds(s.TTFTP50))
		if s.HasConfig && s.Config.PrefixCachingKnown {
			out += fmt.Sprintf(", enable_prefix_caching=%t, block_size %d", s.Config.PrefixCaching, s.Config.BlockSize)
		}
		return out
	},
	SpecDecode: func(s Stats) string {
		if math.IsNaN(s.Acceptance) {
			return "no speculative decoding, time per output token " + ms(s.TPOT)
		}
		return fmt.Sprintf("acceptance %s, time per output token %s", num(s.Acceptance), ms(s.TPOT))
	},
	FP8KVCache: func(s Stats) string {
		var parts []string
		if s.HasConfig && s.Config.CacheDType != "" {
			parts = append(parts, "cache_dtype "+s.Config.CacheDType)
		}
		if s.HasConfig && s.Config.NumGPUBlocks > 0 {
			parts = append(parts, fmt.Sprintf("%d KV blocks", s.Config.NumGPUBlocks))
		}
		pr := perRequest(s)
		parts = append(parts, fmt.Sprintf("KV usage %s, %s running, %s of the pool per running request (about %s fit)", pct(s.KVUsage), num(s.Running), pct(pr), num(1/pr)),
			fmt.Sprintf("%s preemptions/s", num(s.PreemptionRate)))
		return strings.Join(parts, ", ")
	},
	Concurrency: func(s Stats) string {
		return fmt.Sprintf("running %s (ceiling %s), waiting %s (%s of running), KV usage %s", num(s.Running), num(s.RunningMax), num(s.Waiting), pct(s.Waiting/s.Running), pct(s.KVUsage))
	},
}

// num prints a measured number with three significant digits; series.Missing when there is none.
func num(v float64) string { return series.Format("%.3g", v) }

func pct(v float64) string { return series.Format("%.3g%%", 100*v) }

func ms(v float64) string { return series.Format("%.3g ms", 1000*v) }

// seconds prints a latency quantile as its bucket interval and estimate: "0.25–0.5 s (≈0.31 s)".
func seconds(q Interval) string { return interval(q, " s") }

// plain prints a ratio interval: "2–10 (≈4.1)".
func plain(q Interval) string { return interval(q, "") }

func interval(q Interval, unit string) string {
	if !q.Known() {
		return series.Missing
	}
	upper := "+Inf"
	if !math.IsInf(q.Upper, 1) {
		upper = num(q.Upper)
	}
	return fmt.Sprintf("%s–%s%s (≈%s%s)", num(q.Lower), upper, unit, num(q.Value), unit)
}
