package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// window is what the engine did during one scrape interval: the model's own state, from which
// the ground truth is computed (never from the exposition).
type window struct {
	span                        float64 // seconds of the window the server was up
	usage, running, waiting     float64 // time integrals
	deferred                    float64 // time integral of the waiting requests deferred
	preemptions, exhausted      int
	finished, aborted           int
	firstTokens, promptTokens   int
	ttft, prefill, chunks       float64
	queried, hits               int // prefix-cache lookups of requests never preempted
	requeried, rehits           int // and of preempted requests, admitted again to recompute
	recomputes                  int // those admissions
	draftTokens, accepted       int
	itl                         float64
	itlCount                    int
	blocking                    int
	steps                       int // engine steps committed
	truncated                   int // requests finished by length
	prefixCaching, specDecoding bool
}

func (w *window) add(o window) {
	w.span += o.span
	w.usage += o.usage
	w.running += o.running
	w.waiting += o.waiting
	w.deferred += o.deferred
	w.preemptions += o.preemptions
	w.exhausted += o.exhausted
	w.finished += o.finished
	w.aborted += o.aborted
	w.firstTokens += o.firstTokens
	w.promptTokens += o.promptTokens
	w.ttft += o.ttft
	w.prefill += o.prefill
	w.chunks += o.chunks
	w.queried += o.queried
	w.hits += o.hits
	w.requeried += o.requeried
	w.rehits += o.rehits
	w.recomputes += o.recomputes
	w.draftTokens += o.draftTokens
	w.accepted += o.accepted
	w.itl += o.itl
	w.itlCount += o.itlCount
	w.blocking += o.blocking
	w.steps += o.steps
	w.truncated += o.truncated
	w.prefixCaching = w.prefixCaching || o.prefixCaching
	w.specDecoding = w.specDecoding || o.specDecoding
}

// phase is a stretch of the run with one configuration and load.
type phase struct {
	at       float64
	rule     string // the fault's rule while it holds; empty for the instance's own configuration
	engine   EngineConfig
	load     Load
	restart  bool
	downtime float64
	stall    bool // the engine takes no step (see Fault.Stall)
}

// instanceSim drives one instance's engine through simulated time: arrivals, client timeouts,
// configuration changes and restarts, and records what happens as metrics, spans and windows.
type instanceSim struct {
	in       Instance
	index    int
	scen     *Scenario
	rng      *rand.Rand
	eng      *engine
	metrics  *metricSet
	phases   []phase
	next     int // index of the next phase to apply
	cfg      EngineConfig
	load     Load
	now      float64
	upAt     float64 // the server serves again from then (after a restart)
	arrival  float64
	nextID   uint64
	scrape   float64 // window length
	windows  []window
	base     time.Time
	onSpan   func(Span) // nil: spans are not kept
	sampleN  uint64     // keep one span in sampleN
	restarts int
	stalled  bool // the engine is wedged: no step, no abort, while arrivals queue
}

func newInstanceSim(sc *Scenario, index int, duration, scrape float64) *instanceSim {
	in := sc.Instances[index]
	s := &instanceSim{
		in: in, index: index, scen: sc, scrape: scrape,
		rng:  rand.New(rand.NewPCG(sc.Seed, uint64(index)+1)),
		cfg:  in.Engine,
		load: in.Load,
	}
	s.phases = buildPhases(in, duration)
	s.windows = make([]window, int(math.Ceil(duration/scrape))+1)
	s.start()
	s.arrival = s.nextGap(0)
	return s
}

// buildPhases turns the faults into a timeline of configuration changes.
func buildPhases(in Instance, duration float64) []phase {
	var ps []phase
	for _, f := range in.Faults {
		if f.Restart {
			ps = append(ps, phase{at: f.From * duration, engine: in.Engine, load: in.Load, restart: true, downtime: f.Downtime})
			continue
		}
		during := phase{at: f.From * duration, rule: f.Rule, engine: in.Engine, load: in.Load, restart: f.Redeploy, downtime: f.Downtime, stall: f.Stall}
		if f.Engine != nil {
			during.engine = *f.Engine
		}
		if f.Load != nil {
			during.load = *f.Load
		}
		ps = append(ps, during, phase{at: f.To * duration, engine: in.Engine, load: in.Load, restart: f.Redeploy || f.Stall, downtime: f.Downtime})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	return ps
}

// start brings up a fresh server process: new engine, new registry, counters at zero.
func (s *instanceSim) start() {
	s.eng = newEngine(s.cfg, s.rng, s)
	s.metrics = newMetricSet(s.scen.generation(), s.in.Model, s.cfg, s.in.Exposition)
	s.publishState()
}

func (s *instanceSim) publishState() {
	s.metrics.setState(len(s.eng.running), len(s.eng.waiting), s.eng.deferredCount(), s.eng.usage())
}

func (s *instanceSim) up() bool { return s.now >= s.upAt }

// nextGap is the Poisson arrival after the one at from.
func (s *instanceSim) nextGap(from float64) float64 {
	if s.load.RatePerSecond <= 0 {
		return math.Inf(1)
	}
	return from + s.rng.ExpFloat64()/s.load.RatePerSecond
}

func (s *instanceSim) nextPhase() float64 {
	if s.next < len(s.phases) {
		return s.phases[s.next].at
	}
	return math.Inf(1)
}

// advance runs the instance until simulated time until; onScrape is called at each multiple
// of the scrape interval with the server's state at that time.
func (s *instanceSim) advance(until float64, nextScrape *float64, onScrape func(t float64)) {
	for s.now < until {
		if s.up() && !s.stalled && s.eng.busy() {
			dt := s.eng.plan(s.now)
			if dt == 0 && s.eng.preemptions > 0 {
				continue // a request preempted itself: plan again with it in the queue
			}
			if dt > 0 {
				s.publishState()
				end := s.now + dt
				for nextScrape != nil && *nextScrape < end && *nextScrape <= until {
					s.accumulate(*nextScrape)
					onScrape(*nextScrape)
					*nextScrape += s.scrape
				}
				s.accumulate(end)
				s.eng.commit(end, dt)
				s.publishState()
				s.events()
				continue
			}
		}
		t := min(s.arrival, s.nextPhase(), until)
		if !s.up() {
			t = min(t, s.upAt)
		}
		if nextScrape != nil && *nextScrape <= t {
			t = *nextScrape
			s.accumulate(t)
			onScrape(t)
			*nextScrape += s.scrape
		} else {
			s.accumulate(t)
		}
		s.events()
	}
}

// accumulate moves the clock to t, adding the current state's time integrals to the windows.
func (s *instanceSim) accumulate(t float64) {
	if t <= s.now {
		return
	}
	up := s.up()
	usage, running, waiting := s.eng.usage(), float64(len(s.eng.running)), float64(len(s.eng.waiting))
	deferred := float64(s.eng.deferredCount())
	for a := s.now; a < t; {
		k := int(a / s.scrape)
		b := min(t, float64(k+1)*s.scrape)
		if k < len(s.windows) && up {
			w := &s.windows[k]
			d := b - a
			w.span += d
			w.usage += usage * d
			w.running += running * d
			w.waiting += waiting * d
			w.deferred += deferred * d
			w.prefixCaching = w.prefixCaching || s.cfg.PrefixCaching
			w.specDecoding = w.specDecoding || s.cfg.SpecTokens > 0
		}
		a = b
	}
	s.now = t
}

func (s *instanceSim) window() *window {
	k := min(int(s.now/s.scrape), len(s.windows)-1)
	return &s.windows[k]
}

// events applies what is due at s.now: phase changes, arrivals and client timeouts.
func (s *instanceSim) events() {
	for s.next < len(s.phases) && s.phases[s.next].at <= s.now {
		p := s.phases[s.next]
		s.next++
		s.cfg, s.load = p.engine, p.load
		s.stalled = p.stall
		if p.restart {
			s.restarts++
			s.upAt = s.now + p.downtime
			s.start()
			continue
		}
		if math.IsInf(s.arrival, 1) {
			s.arrival = s.nextGap(s.now)
		}
		s.eng.reconfigure(p.engine, s.now)
		s.metrics.setCacheConfig(p.engine)
		s.publishState()
	}
	for s.arrival <= s.now {
		if s.up() {
			r := s.newRequest(s.arrival)
			// A request that queues behind one the fault delayed is slowed by the fault too,
			// even after it ended: the backlog drains only then.
			r.fault = s.faultAt(s.arrival)
			if n := len(s.eng.waiting); r.fault == "" && n > 0 {
				r.fault = s.eng.waiting[n-1].fault
			}
			s.eng.waiting = append(s.eng.waiting, r)
		}
		s.arrival = s.nextGap(s.arrival)
	}
	if s.up() && !s.stalled && s.eng.busy() {
		s.eng.abortExpired(s.now)
	}
	s.publishState()
}

func (s *instanceSim) newRequest(at float64) *request {
	l := s.load
	maxLen := s.cfg.MaxModelLen
	s.nextID++
	r := &request{id: s.nextID, arrival: at, maxTokens: l.MaxTokens, temp: l.Temperature, topP: l.TopP}
	if l.ClientTimeout > 0 {
		r.deadline = at + l.ClientTimeout
	}
	r.target = min(s.sample(l.OutputTokens), l.MaxTokens)
	suffix := s.sample(l.SuffixTokens)
	if l.LongFraction > 0 && s.rng.Float64() < l.LongFraction {
		suffix += s.sample(l.LongTokens)
	}
	if l.LoRAFraction > 0 && s.rng.Float64() < l.LoRAFraction {
		r.adapter = 1 + s.rng.IntN(l.Adapters)
	}
	r.prefixLen = l.PrefixTokens
	if l.PrefixTokens > 0 && !l.UniquePrefix {
		// The id names the prefix's content: which system prompt, and how long it is.
		r.prefixID = (1+s.rng.IntN(l.NumPrefixes))*1_000_003 + l.PrefixTokens
	}
	r.prompt = r.prefixLen + suffix
	if r.prompt+r.target > maxLen {
		// Clients that send more than max_model_len are refused by vLLM's front end; the
		// simulated client trims its prompt instead, so every request reaches the engine.
		r.target = min(r.target, maxLen/4)
		r.prompt = maxLen - r.target
		r.prefixLen = min(r.prefixLen, r.prompt-1)
	}
	return r
}

func (s *instanceSim) sample(d Dist) int {
	v := d.Mean
	if d.CV > 0 {
		sigma2 := math.Log1p(d.CV * d.CV)
		v = math.Exp(math.Log(d.Mean) - sigma2/2 + math.Sqrt(sigma2)*s.rng.NormFloat64())
	}
	n := max(1, int(math.Round(v)))
	if d.Min > 0 {
		n = max(n, d.Min)
	}
	if d.Max > 0 {
		n = min(n, d.Max)
	}
	return n
}

// sink: the engine reports to the instance, which records metrics, windows and spans.

func (s *instanceSim) prefixLookup(queried, hit int, recompute bool) {
	s.metrics.prefixLookup(queried, hit)
	w := s.window()
	if recompute {
		w.requeried += queried
		w.rehits += hit
		w.recomputes++
		return
	}
	w.queried += queried
	w.hits += hit
}

func (s *instanceSim) preempted(*request) {
	s.metrics.preemptions.Inc()
	w := s.window()
	w.preemptions++
	if s.eng.exhausted {
		w.exhausted++
	}
}

func (s *instanceSim) firstToken(r *request, now float64) {
	s.metrics.ttft.Observe(frontEnd + now - r.arrival)
	s.metrics.promptTokens.Add(float64(r.prompt))
	if s.metrics.cachedTk != nil {
		s.metrics.cachedTk.Add(float64(r.cached))
	}
	w := s.window()
	w.firstTokens++
	w.promptTokens += r.prompt
	w.ttft += frontEnd + now - r.arrival
	w.prefill += now - r.firstSched
	w.chunks += float64(r.chunks)
}

func (s *instanceSim) tokens(r *request, n int, itl float64, now float64) {
	s.metrics.genTk.Add(float64(n))
	if itl >= 0 {
		s.metrics.itl.Observe(itl)
		w := s.window()
		w.itl += itl
		w.itlCount++
	}
}

func (s *instanceSim) spec(drafts, draftTokens, accepted int, perPos []int) {
	s.metrics.spec(drafts, draftTokens, accepted, perPos)
	w := s.window()
	w.draftTokens += draftTokens
	w.accepted += accepted
}

func (s *instanceSim) step(now, dt float64, tokens, prefillTokens int, blocking bool) {
	s.metrics.iteration.Observe(float64(tokens))
	s.window().steps++
	if blocking {
		s.window().blocking++
	}
}

// frontEnd is the API server's share of TTFT and e2e (tokenising, detokenising, HTTP): the
// front-end clock starts before the engine's.
const frontEnd = 0.002

func (s *instanceSim) finished(r *request, now float64, reason string) {
	m := s.metrics
	m.success[reason].Inc()
	e2e := frontEnd + now - r.arrival
	m.e2e.Observe(e2e)
	m.reqPrompt.Observe(float64(r.prompt))
	m.reqGen.Observe(float64(r.output))
	if m.maxTokens != nil {
		m.maxTokens.Observe(float64(r.maxTokens))
	}
	w := s.window()
	w.finished++
	if reason == "length" {
		w.truncated++
	}
	if reason == "abort" {
		w.aborted++
		return
	}
	queue := r.firstSched - r.arrival
	prefill := r.firstToken - r.firstSched
	decode := now - r.firstToken
	m.queue.Observe(queue)
	if m.queueV0 != nil {
		m.queueV0.Observe(queue)
	}
	m.prefill.Observe(prefill)
	m.decode.Observe(decode)
	m.inference.Observe(prefill + decode)
	if m.tpot != nil && r.output > 1 {
		m.tpot.Observe(decode / float64(r.output-1))
	}
	if s.onSpan == nil {
		return
	}
	// Identifiers come from a hash, not from the engine's generator, so that keeping or
	// sampling spans never changes the simulation.
	h := splitmix(s.scen.Seed ^ splitmix(uint64(s.index)<<40^uint64(s.restarts)<<32^r.id))
	if s.sampleN > 1 && h%s.sampleN != 0 {
		return
	}
	h2 := splitmix(h)
	sp := Span{
		Instance: s.in.Address, Model: s.in.Model,
		RequestID: fmt.Sprintf("chatcmpl-%016x%016x", h, h2),
		Start:     s.at(r.arrival), End: s.at(now + frontEnd),
		TTFT: frontEnd + r.firstToken - r.arrival, E2E: e2e,
		Queue: queue, Prefill: prefill, Decode: decode, Inference: prefill + decode,
		PromptTokens: r.prompt, CompletionTokens: r.output,
		Temperature: r.temp, TopP: r.topP, MaxTokens: r.maxTokens, FinishReason: reason,
		Fault: r.fault,
	}
	binary.BigEndian.PutUint64(sp.TraceID[:8], splitmix(h2))
	binary.BigEndian.PutUint64(sp.TraceID[8:], splitmix(h2+1))
	binary.BigEndian.PutUint64(sp.SpanID[:], splitmix(h2+2))
	s.onSpan(sp)
}

// faultAt is the rule of the fault that held at simulated time t, or "" when none did.
func (s *instanceSim) faultAt(t float64) string {
	rule := ""
	for _, p := range s.phases {
		if p.at > t {
			break
		}
		rule = p.rule
	}
	return rule
}

// at converts simulated seconds to wall time. Times are kept to the microsecond, as OTLP
// backends such as Jaeger store them.
func (s *instanceSim) at(t float64) time.Time {
	return s.base.Add(time.Duration(t*1e6) * time.Microsecond)
}

// splitmix is SplitMix64's finaliser: a cheap, well-mixed hash of a 64-bit value.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
