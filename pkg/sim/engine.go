package sim

import "math/rand/v2"

// request is one generation request inside the engine. Token accounting follows vLLM V1: a
// request has prompt+output known tokens, of which computed have KV in the cache; a step
// schedules the difference (a prefill chunk, or one token plus drafts when decoding).
type request struct {
	id        uint64
	arrival   float64
	fault     string  // the injected fault that slows it (see Span.Fault)
	deadline  float64 // client gives up then; 0: never
	prefixID  int     // 0: the prefix is not shared with any other request
	prefixLen int
	adapter   int  // the LoRA adapter it asks for; 0: the base model
	deferred  bool // the last plan skipped it: its adapter found no LoRA slot
	prompt    int
	target    int // output tokens the request will produce
	maxTokens int
	temp      float64
	topP      float64

	computed int
	output   int
	own      int          // blocks held privately
	entry    *prefixEntry // shared prefix blocks this request references
	shared   int
	// kept are the blocks it had computed when it was last preempted, still cached until they
	// are evicted: its recompute finds them (see preempt). nil: none.
	kept        *prefixEntry
	preemptions int

	scheduled  bool
	firstSched float64
	firstToken float64
	lastToken  float64
	cached     int // prompt tokens found in the prefix cache at first scheduling
	chunks     int // steps its first prefill took
	done       bool
}

func (r *request) held() int { return r.own + r.shared }

// prefixEntry is a cached shared prefix: its full blocks, and how many running requests use
// them. Unreferenced entries are evictable: vLLM counts them as free. A private entry is a
// preempted request's own computed blocks, which only that request's recompute can hit: they
// continue its prompt's chain from block start, so they hit only after its first start blocks
// did, and eviction takes them from the chain's tail, as vLLM's free queue holds a freed
// request's blocks tail first.
type prefixEntry struct {
	id       int
	blocks   int
	ref      int
	lastUsed float64
	private  bool
	start    int
}

type scheduled struct {
	r      *request
	n      int
	decode bool
	drafts int
}

// sink receives what the engine does, for metrics, spans and the ground truth.
type sink interface {
	// prefixLookup is one admission's lookup; recompute when the request was preempted before.
	prefixLookup(queried, hit int, recompute bool)
	preempted(r *request)
	firstToken(r *request, now float64)
	tokens(r *request, n int, itl float64, now float64)
	spec(drafts, draftTokens, accepted int, perPos []int)
	finished(r *request, now float64, reason string)
	step(now, dt float64, tokens, prefillTokens int, blocking bool)
}

// engine is one vLLM engine core: a continuous-batching scheduler over a KV block pool.
type engine struct {
	cfg       EngineConfig
	rng       *rand.Rand
	out       sink
	total     int
	free      int // blocks neither used nor holding a cached prefix
	evictable int // blocks of cached prefixes no running request uses
	prefixes  []*prefixEntry
	waiting   []*request
	running   []*request

	sched       []scheduled
	perPos      []int
	preemptions int  // in the last plan
	exhausted   bool // the last plan found the pool full
}

func newEngine(cfg EngineConfig, rng *rand.Rand, out sink) *engine {
	n := cfg.blocks()
	return &engine{cfg: cfg, rng: rng, out: out, total: n, free: n}
}

func (e *engine) busy() bool { return len(e.running)+len(e.waiting) > 0 }

// usage is vllm:kv_cache_usage_perc: the fraction of blocks that running requests hold.
func (e *engine) usage() float64 {
	return float64(e.total-e.free-e.evictable) / float64(e.total)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// alloc takes n blocks, evicting unreferenced cached prefixes (least recently used first)
// when the free list is short.
func (e *engine) alloc(n int, now float64) bool {
	if n <= 0 {
		return true
	}
	if e.free+e.evictable < n {
		return false
	}
	for e.free < n {
		victim := -1
		for i, p := range e.prefixes {
			if p.ref == 0 && (victim < 0 || p.lastUsed < e.prefixes[victim].lastUsed) {
				victim = i
			}
		}
		p := e.prefixes[victim]
		take := p.blocks
		if p.private {
			take = min(take, n-e.free)
		}
		e.free += take
		e.evictable -= take
		if p.blocks -= take; p.blocks == 0 {
			e.prefixes = append(e.prefixes[:victim], e.prefixes[victim+1:]...)
		}
	}
	e.free -= n
	return true
}

func (e *engine) release(r *request, now float64) {
	e.free += r.own
	r.own = 0
	if r.entry != nil {
		r.entry.ref--
		if r.entry.ref == 0 {
			e.evictable += r.entry.blocks
			r.entry.lastUsed = now
		}
		r.entry, r.shared = nil, 0
	}
}

// claimPrefix references the cached blocks of r's prefix, so that allocating r's own blocks
// cannot evict them, and returns how many blocks hit. vLLM always computes the last prompt
// token, so a hit never covers the whole prompt.
func (e *engine) claimPrefix(r *request) int {
	if !e.cfg.PrefixCaching || r.prefixID == 0 {
		return 0
	}
	for _, p := range e.prefixes {
		if p.private || p.id != r.prefixID {
			continue
		}
		hit := min(p.blocks, r.prefixLen/e.cfg.BlockSize, (r.prompt+r.output-1)/e.cfg.BlockSize)
		if hit == 0 {
			return 0
		}
		if p.ref == 0 {
			e.evictable -= p.blocks
		}
		p.ref++
		r.entry, r.shared = p, hit
		return hit
	}
	return 0
}

// takeKept removes r's kept blocks from the cache so that allocating its other blocks cannot
// evict them, and returns how many of them continue its shared hit of hit blocks: a chain broken
// by an evicted shared prefix hits nothing more, and vLLM always computes the last token.
func (e *engine) takeKept(r *request, hit int) int {
	p := r.kept
	if p == nil {
		return 0
	}
	e.uncache(p)
	if hit < p.start {
		return 0
	}
	return max(0, min(p.start+p.blocks, (r.prompt+r.output-1)/e.cfg.BlockSize)-hit)
}

// putKept returns r's kept blocks to the cache when its admission failed after takeKept.
func (e *engine) putKept(r *request) {
	if r.kept != nil {
		e.prefixes = append(e.prefixes, r.kept)
		e.evictable += r.kept.blocks
	}
}

// forgetKept frees r's kept blocks for good: the used ones became r's own, the rest are free.
func (e *engine) forgetKept(r *request, used int) {
	if r.kept != nil {
		e.free += r.kept.blocks - used
		r.kept = nil
	}
}

// uncache takes an unreferenced entry out of the cache with the blocks eviction left it.
func (e *engine) uncache(p *prefixEntry) {
	for i, q := range e.prefixes {
		if q == p {
			e.prefixes = append(e.prefixes[:i], e.prefixes[i+1:]...)
			e.evictable -= p.blocks
			return
		}
	}
}

func (e *engine) unclaim(r *request, now float64) {
	if r.entry == nil {
		return
	}
	r.entry.ref--
	if r.entry.ref == 0 {
		e.evictable += r.entry.blocks
		r.entry.lastUsed = now
	}
	r.entry, r.shared = nil, 0
}

// publishPrefix turns the blocks of r's computed prefix into a cache entry that later
// requests with the same prefix hit, unless another request cached it first.
func (e *engine) publishPrefix(r *request) {
	if !e.cfg.PrefixCaching || r.prefixID == 0 || r.entry != nil {
		return
	}
	n := r.prefixLen / e.cfg.BlockSize
	if n == 0 || r.computed < n*e.cfg.BlockSize {
		return
	}
	for _, p := range e.prefixes {
		if !p.private && p.id == r.prefixID {
			return
		}
	}
	p := &prefixEntry{id: r.prefixID, blocks: n, ref: 1}
	e.prefixes = append(e.prefixes, p)
	r.own -= n
	r.entry, r.shared = p, n
}

// preempt is vLLM's preemption by recompute: the request loses its blocks and returns to the
// front of the queue, to prefill its prompt and output so far again. With prefix caching its
// full computed blocks stay cached, evictable, until other requests need them: vLLM frees a
// preempted request's blocks without dropping their hashes, so its recompute hits whatever of
// them is left (takeKept).
func (e *engine) preempt(r *request, now float64) {
	keep := 0
	if e.cfg.PrefixCaching {
		keep = min(r.own, r.computed/e.cfg.BlockSize-r.shared)
	}
	if keep > 0 {
		r.kept = &prefixEntry{blocks: keep, lastUsed: now, private: true, start: r.shared}
		e.prefixes = append(e.prefixes, r.kept)
		r.own -= keep
		e.evictable += keep
	}
	e.release(r, now)
	r.computed = 0
	r.preemptions++
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = r
	e.preemptions++
	e.out.preempted(r)
}

// loraFits reports whether r's adapter can run now: the base model always can, an adapter that
// is already running can, and another one only while fewer than MaxLoras adapters run.
func (e *engine) loraFits(r *request) bool {
	if r.adapter == 0 {
		return true
	}
	active := map[int]bool{}
	for _, o := range e.running {
		if o.adapter != 0 {
			active[o.adapter] = true
		}
	}
	return active[r.adapter] || len(active) < e.cfg.MaxLoras
}

// deferredCount is how many waiting requests the last plan skipped for want of a LoRA slot:
// vllm:num_requests_waiting_by_reason{reason="deferred"}.
func (e *engine) deferredCount() int {
	n := 0
	for _, r := range e.waiting {
		if r.deferred {
			n++
		}
	}
	return n
}

// plan schedules one step at now, as vLLM V1's scheduler does: running requests first, in
// order, preempting from the tail when blocks run out; then waiting requests in order while the
// token budget, max_num_seqs and the pool allow, and only if nothing was preempted. A waiting
// request whose LoRA adapter finds no slot is deferred: skipped, and the next one considered.
// It returns the step's duration, 0 when nothing could be scheduled.
func (e *engine) plan(now float64) float64 {
	e.sched = e.sched[:0]
	e.preemptions = 0
	e.exhausted = false
	bs := e.cfg.BlockSize
	budget := e.cfg.MaxNumBatchedTokens
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		need := r.prompt + r.output - r.computed
		s := scheduled{r: r, n: min(need, budget), decode: need == 1}
		if s.decode && e.cfg.SpecTokens > 0 {
			s.drafts = min(e.cfg.SpecTokens, budget-1)
			s.n += s.drafts
		}
		blocks := ceilDiv(r.computed+s.n, bs) - r.held()
		self := false
		for !e.alloc(blocks, now) {
			e.exhausted = true
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim, now)
			if victim == r {
				self = true
				break
			}
		}
		if self {
			break
		}
		if blocks > 0 {
			r.own += blocks
		}
		e.sched = append(e.sched, s)
		budget -= s.n
	}
	for next := 0; e.preemptions == 0 && next < len(e.waiting) && len(e.running) < e.cfg.MaxNumSeqs && budget > 0; {
		r := e.waiting[next]
		if r.deferred = !e.loraFits(r); r.deferred {
			next++
			continue
		}
		hit := e.claimPrefix(r)
		kept := e.takeKept(r, hit)
		computed := (hit + kept) * bs
		need := r.prompt + r.output - computed
		if !e.cfg.ChunkedPrefill && need > budget {
			e.putKept(r)
			e.unclaim(r, now)
			break
		}
		n := min(need, budget)
		blocks := ceilDiv(computed+n, bs) - hit - kept
		if !e.alloc(blocks, now) {
			e.putKept(r)
			e.unclaim(r, now)
			e.exhausted = true
			break
		}
		e.forgetKept(r, kept)
		if e.cfg.PrefixCaching {
			e.out.prefixLookup(r.prompt+r.output, computed, r.preemptions > 0)
		}
		r.own, r.computed = blocks+kept, computed
		if !r.scheduled {
			r.scheduled, r.firstSched, r.cached = true, now, computed
		}
		e.waiting = append(e.waiting[:next], e.waiting[next+1:]...)
		e.running = append(e.running, r)
		e.sched = append(e.sched, scheduled{r: r, n: n})
		budget -= n
	}
	if len(e.sched) == 0 {
		return 0
	}
	c := e.cfg.Cost
	var prefill, decode, drafts, context int
	for _, s := range e.sched {
		if s.decode {
			decode++
			drafts += s.drafts
		} else {
			prefill += s.n
		}
		context += s.r.computed
	}
	return c.StepOverhead + c.PerPrefillToken*float64(prefill) + c.PerDecodeSeq*float64(decode) +
		c.PerDecodeSeq*c.PerDraftToken*float64(drafts) + c.PerContextToken*float64(context)
}

// commit applies the planned step, which ended at now: prefill chunks advance, completed
// prefills and decodes sample tokens (drafts accepted one by one until the first rejection),
// and requests that reached their length finish.
func (e *engine) commit(now, dt float64) {
	var tokens, prefill, drafts, draftTokens, accepted int
	if cap(e.perPos) < e.cfg.SpecTokens {
		e.perPos = make([]int, e.cfg.SpecTokens)
	}
	e.perPos = e.perPos[:e.cfg.SpecTokens]
	clear(e.perPos)
	finished := false
	for _, s := range e.sched {
		r := s.r
		tokens += s.n
		produced := 0
		if s.decode {
			a := 0
			for a < s.drafts && e.rng.Float64() < e.cfg.SpecAcceptance {
				e.perPos[a]++
				a++
			}
			if s.drafts > 0 {
				drafts++
				draftTokens += s.drafts
				accepted += a
			}
			produced = 1 + a
			r.computed += produced
		} else {
			prefill += s.n
			r.computed += s.n
			if r.firstToken == 0 {
				r.chunks++
			}
			e.publishPrefix(r)
			if r.computed == r.prompt+r.output {
				produced = 1
			}
		}
		if produced == 0 {
			continue
		}
		r.output += produced
		if over := r.output - r.target; over > 0 {
			r.output -= over
			r.computed -= over
			produced -= over
		}
		first := r.firstToken == 0
		if first {
			r.firstToken = now
			e.out.firstToken(r, now)
		}
		itl := -1.0
		if !first {
			itl = now - r.lastToken
		}
		r.lastToken = now
		e.out.tokens(r, produced, itl, now)
		if r.output >= r.target {
			reason := "stop"
			if r.target >= r.maxTokens {
				reason = "length"
			}
			e.release(r, now)
			r.done, finished = true, true
			e.out.finished(r, now, reason)
		}
	}
	if drafts > 0 {
		e.out.spec(drafts, draftTokens, accepted, e.perPos)
	}
	blocking := !e.cfg.ChunkedPrefill && prefill > 0 && dt >= blockingStep && len(e.sched)+len(e.waiting) > 1
	e.out.step(now, dt, tokens, prefill, blocking)
	if finished {
		e.running = removeDone(e.running)
	}
}

// blockingStep is how long a whole-prompt prefill step must take, with other requests in the
// engine, for the ground truth to call it blocking: long enough to show in TTFT's buckets.
const blockingStep = 0.5

func removeDone(rs []*request) []*request {
	out := rs[:0]
	for _, r := range rs {
		if !r.done {
			out = append(out, r)
		}
	}
	clear(rs[len(out):])
	return out
}

// abortExpired aborts the requests whose client gave up by now.
func (e *engine) abortExpired(now float64) {
	drop := func(rs []*request) []*request {
		any := false
		for _, r := range rs {
			if r.deadline > 0 && r.deadline <= now {
				if r.kept != nil {
					e.uncache(r.kept)
					e.forgetKept(r, 0)
				}
				e.release(r, now)
				r.done, any = true, true
				e.out.finished(r, now, "abort")
			}
		}
		if !any {
			return rs
		}
		return removeDone(rs)
	}
	e.running = drop(e.running)
	e.waiting = drop(e.waiting)
}

// reconfigure applies a new engine configuration to the live engine. A smaller pool first
// drops cached prefixes, then preempts running requests from the tail until what remains fits.
func (e *engine) reconfigure(cfg EngineConfig, now float64) {
	e.cfg = cfg
	n := cfg.blocks()
	e.free += n - e.total
	e.total = n
	if !cfg.PrefixCaching || e.free < 0 {
		kept := e.prefixes[:0]
		for _, p := range e.prefixes {
			if p.ref == 0 {
				e.free += p.blocks
				e.evictable -= p.blocks
				p.blocks = 0 // a preempted request's kept blocks are gone too
				continue
			}
			kept = append(kept, p)
		}
		e.prefixes = kept
	}
	for e.free < 0 && len(e.running) > 0 {
		victim := e.running[len(e.running)-1]
		e.running = e.running[:len(e.running)-1]
		e.preempt(victim, now)
	}
}
