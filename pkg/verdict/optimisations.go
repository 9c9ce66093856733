package verdict

import (
	"fmt"
	"math"
)

// test is an optimisation's own verdict once the common gates passed: outcome, change, reason.
type test func(base, cur Stats, p Params) (Outcome, string, string)

var tests = map[Optimisation]test{
	ChunkedPrefill: chunkedPrefill,
	PrefixCaching:  prefixCaching,
	SpecDecode:     specDecode,
	FP8KVCache:     fp8KVCache,
	Concurrency:    concurrency,
}

func missing(what string, base, cur bool) string {
	switch {
	case !base && !cur:
		return what + " are missing in both windows"
	case !base:
		return what + " are missing in the baseline window"
	}
	return what + " are missing in the current window"
}

func chunkedPrefill(base, cur Stats, _ Params) (Outcome, string, string) {
	bk, ck := base.TTFTP99.Known() && base.TTFTP50.Known(), cur.TTFTP99.Known() && cur.TTFTP50.Known()
	if !bk || !ck {
		return NotEnoughData, "", missing("TTFT quantiles", bk, ck)
	}
	br, cr := ratio(base.TTFTP99, base.TTFTP50), ratio(cur.TTFTP99, cur.TTFTP50)
	change := fmt.Sprintf("TTFT p99 %s → %s; p99/p50 %s → %s", seconds(base.TTFTP99), seconds(cur.TTFTP99), plain(br), plain(cr))
	switch {
	case cur.TTFTP99.Down(base.TTFTP99) && !cr.Up(br):
		return Worked, change, fmt.Sprintf("TTFT p99 left its baseline bucket (now at most %s s, before above %s s) and p99/p50 moved from about %s to %s: long prefills no longer hold up other requests",
			num(cur.TTFTP99.Upper), num(base.TTFTP99.Lower), num(br.Value), num(cr.Value))
	case cur.TTFTP99.Down(base.TTFTP99):
		return DidNotWork, change, fmt.Sprintf("TTFT p99 fell but p99/p50 certainly rose (%s → %s): the median got slower, so latencies spread further from 1", plain(br), plain(cr))
	case cur.TTFTP99.Up(base.TTFTP99):
		return DidNotWork, change, fmt.Sprintf("TTFT p99 rose from %s to %s: long prefills block other requests more than before", seconds(base.TTFTP99), seconds(cur.TTFTP99))
	}
	return DidNotWork, change, fmt.Sprintf("TTFT p99 stayed within bucket resolution (baseline %s, current %s): no improvement is measurable", seconds(base.TTFTP99), seconds(cur.TTFTP99))
}

func prefixCaching(base, cur Stats, p Params) (Outcome, string, string) {
	if math.IsNaN(cur.HitRate) {
		return NotEnoughData, "", "no prefix-cache lookups in the current window"
	}
	change := fmt.Sprintf("hit rate %s → %s; TTFT p50 %s → %s", num(base.HitRate), num(cur.HitRate), seconds(base.TTFTP50), seconds(cur.TTFTP50))
	if base.HitRate > p.HitRate && cur.HitRate > p.HitRate {
		return NotComparable, change, fmt.Sprintf("the hit rate was already %s in the baseline: prefix caching worked before too, so nothing can be credited to a change; choose a baseline from before prefix caching was enabled or the prompts changed", num(base.HitRate))
	}
	if cur.HitRate <= p.HitRate {
		return DidNotWork, change, missReason(cur, p)
	}
	if !base.TTFTP50.Known() || !cur.TTFTP50.Known() {
		return NotEnoughData, change, missing("TTFT quantiles", base.TTFTP50.Known(), cur.TTFTP50.Known())
	}
	switch {
	case cur.TTFTP50.Down(base.TTFTP50):
		return Worked, change, fmt.Sprintf("%s of prompt tokens now come from the cache and TTFT p50 fell from %s to %s", pct(cur.HitRate), seconds(base.TTFTP50), seconds(cur.TTFTP50))
	case cur.TTFTP50.Up(base.TTFTP50):
		return DidNotWork, change, fmt.Sprintf("the hit rate is %s, yet TTFT p50 rose from %s to %s: something else slows the first token (queueing, longer prefills)", num(cur.HitRate), seconds(base.TTFTP50), seconds(cur.TTFTP50))
	}
	return DidNotWork, change, fmt.Sprintf("the hit rate is %s, but TTFT p50 stayed within bucket resolution (baseline %s, current %s): no TTFT gain is measurable", num(cur.HitRate), seconds(base.TTFTP50), seconds(cur.TTFTP50))
}

// missReason explains a low hit rate. vLLM caches whole KV blocks only, so a shared prefix
// shorter than one block never hits; the metrics do not show the prefix itself, so the cached
// tokens per request stand in for it.
func missReason(cur Stats, p Params) string {
	block := 0
	if cur.HasConfig {
		block = cur.Config.BlockSize
	}
	if block > 0 && cur.PromptLength < float64(block) {
		return fmt.Sprintf("prompts average %s tokens, shorter than one KV block (block_size %d): vLLM caches whole blocks only, so no prompt can hit the cache", num(cur.PromptLength), block)
	}
	cached := cur.HitRate * cur.PromptLength
	if block > 0 && cached < float64(block) {
		return fmt.Sprintf("hit rate %s: requests share fewer than one KV block of tokens (about %s cached tokens per request, block_size %d); a shared prefix shorter than one block can never hit, and one that differs between requests (a timestamp or session id in the system prompt) cannot either: make the shared prefix byte-identical and longer than %d tokens",
			num(cur.HitRate), num(cached), block, block)
	}
	return fmt.Sprintf("hit rate %s is not above %s: most prompt tokens miss the cache; the shared prefix is probably not byte-identical (timestamps, session ids in the system prompt), or is evicted before it is reused", num(cur.HitRate), num(p.HitRate))
}

func specDecode(base, cur Stats, p Params) (Outcome, string, string) {
	change := fmt.Sprintf("acceptance %s → %s; time per output token %s → %s", num(base.Acceptance), num(cur.Acceptance), ms(base.TPOT), ms(cur.TPOT))
	if base.Acceptance > p.Acceptance && cur.Acceptance > p.Acceptance {
		return NotComparable, change, fmt.Sprintf("the acceptance was already %s in the baseline: speculative decoding worked before too; choose a baseline from before it was enabled or the drafter changed", num(base.Acceptance))
	}
	if cur.Acceptance < p.Counterproductive {
		return DidNotWork, change, fmt.Sprintf("acceptance %s is below %s: most drafts are rejected and verifying them costs more than they save (counterproductive); use a drafter of the target's family, or disable speculative decoding", num(cur.Acceptance), num(p.Counterproductive))
	}
	if cur.Acceptance <= p.Acceptance {
		return DidNotWork, change, fmt.Sprintf("acceptance %s is not above %s: the drafter is only partly aligned with the target, so speculation gains little", num(cur.Acceptance), num(p.Acceptance))
	}
	if math.IsNaN(base.TPOT) || math.IsNaN(cur.TPOT) {
		return NotEnoughData, change, missing("decode times per output token", !math.IsNaN(base.TPOT), !math.IsNaN(cur.TPOT))
	}
	d := cur.TPOT/base.TPOT - 1
	if d <= -p.MeanChange {
		return Worked, change, fmt.Sprintf("acceptance %s and decode time per output token fell %.0f%% (%s → %s)", num(cur.Acceptance), -100*d, ms(base.TPOT), ms(cur.TPOT))
	}
	return DidNotWork, change, fmt.Sprintf("acceptance %s, but decode time per output token did not fall by %s (%s → %s, %+.0f%%): verification eats the gain", num(cur.Acceptance), pct(p.MeanChange), ms(base.TPOT), ms(cur.TPOT), 100*d)
}

// perRequest is the share of the KV pool one running request holds.
func perRequest(s Stats) float64 {
	if !(s.Running > 0) || math.IsNaN(s.KVUsage) {
		return math.NaN()
	}
	return s.KVUsage / s.Running
}

func fp8KVCache(base, cur Stats, p Params) (Outcome, string, string) {
	if base.HasConfig && base.Config.FP8() {
		return NotComparable, "", fmt.Sprintf("the KV cache was already %s in the baseline window: choose a baseline from before the change to fp8", base.Config.CacheDType)
	}
	bp, cp := perRequest(base), perRequest(cur)
	if math.IsNaN(bp) || math.IsNaN(cp) {
		return NotEnoughData, "", missing("KV usage and running requests", !math.IsNaN(bp), !math.IsNaN(cp))
	}
	// An FP8 KV cache is judged by KV usage at the same concurrency: per running request, with
	// the mean running within the load tolerance, since the tokens a request holds grow with how
	// long it has been decoding, which a different concurrency changes.
	if d := cur.Running/base.Running - 1; math.Abs(d) > p.LoadTolerance {
		return NotComparable, "", fmt.Sprintf("mean running requests went from %s to %s (%+.0f%%, more than %s): the fp8 check compares KV usage at the same concurrency; choose windows with similar load",
			num(base.Running), num(cur.Running), 100*d, pct(p.LoadTolerance))
	}
	r := cp / bp
	change := fmt.Sprintf("KV per running request ×%s; requests that fit %s → %s", num(r), num(1/bp), num(1/cp))
	if base.HasConfig && cur.HasConfig && base.Config.BlockSize > 0 && cur.Config.BlockSize > 0 {
		bt, ct := base.Config.NumGPUBlocks*base.Config.BlockSize, cur.Config.NumGPUBlocks*cur.Config.BlockSize
		change += fmt.Sprintf("; KV pool %d → %d tokens (num_gpu_blocks × block_size; fp8 should give about 2×)", bt, ct)
	}
	blocks := ""
	blocksOK := true
	if base.HasConfig && cur.HasConfig && base.Config.NumGPUBlocks > 0 && cur.Config.NumGPUBlocks > 0 {
		br := float64(cur.Config.NumGPUBlocks) / float64(base.Config.NumGPUBlocks)
		blocksOK = br >= p.FP8Blocks
		blocks = fmt.Sprintf(" and KV blocks %d → %d (×%s)", base.Config.NumGPUBlocks, cur.Config.NumGPUBlocks, num(br))
		change += fmt.Sprintf("; KV blocks %d → %d", base.Config.NumGPUBlocks, cur.Config.NumGPUBlocks)
	}
	switch {
	case r <= p.FP8Halved && blocksOK:
		return Worked, change, fmt.Sprintf("KV usage per running request went from %s to %s of the pool (×%s)%s: about %s requests fit before preemptions instead of %s",
			pct(bp), pct(cp), num(r), blocks, num(1/cp), num(1/bp))
	case r > p.FP8Halved:
		return DidNotWork, change, fmt.Sprintf("KV usage per running request only went from %s to %s of the pool (×%s, expected at most ×%s): the pool did not grow as fp8 should make it", pct(bp), pct(cp), num(r), num(p.FP8Halved))
	}
	return DidNotWork, change, fmt.Sprintf("KV usage per running request fell (×%s), but%s is less than ×%s: the memory fp8 saved did not go to KV blocks (check --gpu-memory-utilization)", num(r), blocks, num(p.FP8Blocks))
}

func concurrency(base, cur Stats, p Params) (Outcome, string, string) {
	if !(cur.RunningMax > 0) || math.IsNaN(cur.Waiting) {
		return NotEnoughData, "", "no running or waiting requests in the current window"
	}
	share := cur.Waiting / cur.Running
	change := fmt.Sprintf("running %s → %s; waiting %s → %s of running", num(base.Running), num(cur.Running), pct(base.Waiting/base.Running), pct(share))
	near := cur.Running >= p.NearCeiling*cur.RunningMax
	switch {
	case near && share < p.WaitingShare:
		return Worked, change, fmt.Sprintf("running averages %s against an observed ceiling of %s and waiting is %s of running: the batch is kept full without a queue", num(cur.Running), num(cur.RunningMax), pct(share))
	case share >= p.WaitingShare:
		return DidNotWork, change, fmt.Sprintf("waiting is %s of running (%s against %s): requests queue; raise --max-num-seqs if KV usage (%s) leaves room, else add capacity", pct(share), num(cur.Waiting), num(cur.Running), pct(cur.KVUsage))
	}
	return DidNotWork, change, fmt.Sprintf("running averages %s, below %s of its observed ceiling %s: the batch is rarely full, so max_num_seqs is not what limits this server", num(cur.Running), pct(p.NearCeiling), num(cur.RunningMax))
}
