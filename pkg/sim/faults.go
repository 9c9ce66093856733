package sim

// Rule ids, as faults, ground truth and scenarios name them: the diagnosis's (README, The
// diagnosis matrix). A rule's scenario is named by its id: its fault strikes FaultyInstance
// from FaultFrom to FaultTo, and the simulator reads its ground truth from the engine's own
// state. A restart is a fault of no rule.
const (
	RuleEngineStalled         = "engine_stalled"
	RulePrefillBlocking       = "prefill_blocking"
	RuleTokenBudgetStarved    = "token_budget_starved"
	RulePrefixCacheMiss       = "prefix_cache_miss"
	RuleSpecDecodeInefficient = "spec_decode_inefficient"
	RuleKVCacheSaturated      = "kv_cache_saturated"
	RulePreemptionsFreeCache  = "preemptions_free_cache"
	RuleQueueWithFreeCache    = "queue_with_free_cache"
	RuleQueueDeferred         = "queue_deferred"
	RulePastTheKnee           = "past_the_knee"
	RuleClientTimeouts        = "client_timeouts"
	RuleOutputsTruncated      = "outputs_truncated"
	RulePrefillBound          = "prefill_bound"
	RuleDecodeBound           = "decode_bound"
	faultRestart              = "restart"
)

// faultScenario is one rule's scenario.
type faultScenario struct {
	build func() Scenario
	// mechanism says, from engine state over a minute (and the instance's state before the
	// fault as the baseline), whether the fault's cause is at work: the ground truth.
	mechanism func(a, base window) bool
	// v0Rule, when set, is the rule a V0 server's metrics show the fault as, with that rule's
	// mechanism as the ground truth: V0 did not report why requests wait.
	v0Rule string
	// alsoTrips are the rules whose conditions the fault trips on its instance by its nature
	// while it lasts (a saturated cache also queues requests), besides the latency symptoms that
	// the diagnosis reports as secondary.
	alsoTrips []string
}

// faults are the rules' scenarios, by rule id.
var faults = map[string]faultScenario{
	RuleEngineStalled: {
		build: func() Scenario {
			sc := faulty(RuleEngineStalled,
				"the engine wedges (a hung collective): it takes no step while its API server keeps answering and /metrics keeps being "+
					"scraped, so the running requests hang and arrivals pile up in the queue with counters flat; the operator restarts it "+
					"at the fault's end, losing the queue",
				nil,
				func(EngineConfig, Load) (*EngineConfig, *Load) { return nil, nil })
			f := &sc.Instances[1].Faults[0]
			f.Stall, f.Downtime = true, redeployDowntime
			return sc
		},
		// Requests were in the engine and it committed no step for the whole minute.
		mechanism: func(a, _ window) bool {
			return a.steps == 0 && a.running+a.waiting > 0
		},
		// The arrivals queue behind the wedged engine with its KV cache as it stopped, mostly free.
		alsoTrips: []string{RuleQueueWithFreeCache},
	},
	RulePrefillBlocking: {
		build: func() Scenario {
			return faulty(RulePrefillBlocking,
				"chunked prefill off; during the fault 4% of prompts carry a 15k-token document, prefilled whole in ~0.9 s steps that stall everyone",
				func(in *Instance) {
					in.Engine.ChunkedPrefill = false
					in.Engine.MaxModelLen = 16384
					in.Engine.MaxNumBatchedTokens = 16384
					in.Engine.NumGPUBlocks = 12000
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.LongFraction = 0.04
					l.LongTokens = Dist{Mean: 15000, CV: 0.05, Max: 15800}
					return nil, &l
				})
		},
		// Long prompts prefilled whole held the engine for half a second or more.
		mechanism: func(a, _ window) bool { return a.blocking > 0 },
	},
	RuleTokenBudgetStarved: {
		build: func() Scenario {
			sc := faulty(RuleTokenBudgetStarved,
				"a document pipeline (fixed-size chunks of ~500 tokens behind shared instructions, 1.8 requests a second, max_num_seqs 48) "+
					"is redeployed with max_num_batched_tokens 48: every prompt is prefilled in many small chunks, one prefill after "+
					"another, so TTFT p50 and p99 both rise while the queue stays shorter than the prefills",
				func(in *Instance) {
					in.Engine.MaxNumSeqs = 48
					in.Load.RatePerSecond = 1.8
					in.Load.SuffixTokens = Dist{Mean: 500, CV: 0.2, Min: 8}
				},
				func(e EngineConfig, _ Load) (*EngineConfig, *Load) {
					e.MaxNumBatchedTokens = 48
					return &e, nil
				})
			return redeployed(sc)
		},
		// Prompts took several steps to prefill because of the token budget, without KV pressure.
		mechanism: func(a, base window) bool {
			return a.firstTokens > 0 && mean(a.chunks, a.firstTokens) >= 3 &&
				mean(a.chunks, a.firstTokens) >= 2*max(1, mean(base.chunks, base.firstTokens)) &&
				a.preemptions == 0 && a.usage/a.span < 0.85
		},
	},
	RulePrefixCacheMiss: {
		build: func() Scenario {
			return faulty(RulePrefixCacheMiss,
				"a 7000-token shared system prompt; during the fault it carries a per-request timestamp, so no prompt shares its prefix",
				func(in *Instance) {
					in.Load.PrefixTokens, in.Load.NumPrefixes, in.Load.RatePerSecond = 7000, 2, 1
					in.Load.SuffixTokens = Dist{Mean: 200, CV: 0.5, Min: 8}
					in.Engine.NumGPUBlocks = 12000
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.UniquePrefix = true
					return nil, &l
				})
		},
		// Prefix caching is on but prompts do not share their prefix.
		mechanism: func(a, _ window) bool {
			return a.prefixCaching && a.queried > 0 && float64(a.hits)/float64(a.queried) < 0.5
		},
	},
	RuleSpecDecodeInefficient: {
		build: func() Scenario {
			return faulty(RuleSpecDecodeInefficient,
				"speculative decoding with 3 draft tokens; during the fault clients sample at temperature 1.0 and the drafter's acceptance drops from 0.85 to 0.35 per token",
				func(in *Instance) {
					in.Engine.SpecTokens, in.Engine.SpecAcceptance = 3, 0.85
				},
				func(e EngineConfig, l Load) (*EngineConfig, *Load) {
					e.SpecAcceptance = 0.35
					l.Temperature = 1.0
					return &e, &l
				})
		},
		// The drafter's tokens are mostly rejected.
		mechanism: func(a, _ window) bool {
			return a.specDecoding && a.draftTokens > 0 && float64(a.accepted)/float64(a.draftTokens) < 0.6
		},
	},
	RuleKVCacheSaturated: {
		build: func() Scenario {
			return faulty(RuleKVCacheSaturated,
				"a client switches to long answers (~1200 tokens, 1.1 requests a second): the running requests outgrow the KV pool and are preempted; "+
					"the queue of preempted requests drains within minutes of the fault's end",
				nil,
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.OutputTokens = Dist{Mean: 1200, CV: 0.3, Min: 64}
					l.MaxTokens = 2048
					l.RatePerSecond = 1.1
					return nil, &l
				})
		},
		// The pool ran out and running requests were preempted, with the cache nearly full.
		mechanism: func(a, _ window) bool {
			return a.preemptions > 0 && a.exhausted > 0 && a.usage/a.span >= 0.85
		},
		alsoTrips: []string{RulePastTheKnee},
	},
	RulePreemptionsFreeCache: {
		build: func() Scenario {
			sc := faulty(RulePreemptionsFreeCache,
				"an extraction pipeline (1.5 requests a second: ~3200-token documents behind short instructions, ~40-token answers) "+
					"is redeployed onto a GPU shared with another model: --gpu-memory-utilization 0.5 leaves a 1050-block pool "+
					"(16,800 tokens, about five documents), --max-num-seqs is raised to 256 and prefix caching is off; when arrivals bunch "+
					"the pool runs out for a moment and the newest request is preempted, until an answer finishes and frees its document, "+
					"so preemptions come every minute while the cache is mostly free on average; the redeploy back restores the pool",
				func(in *Instance) {
					in.Load.RatePerSecond, in.Load.PrefixTokens = 1.5, 128
					in.Load.SuffixTokens = Dist{Mean: 3200, CV: 0.25, Min: 8}
					in.Load.OutputTokens = Dist{Mean: 40, CV: 0.5, Min: 4}
				},
				func(e EngineConfig, _ Load) (*EngineConfig, *Load) {
					e.NumGPUBlocks, e.GPUMemoryUtilization, e.MaxNumSeqs, e.PrefixCaching = 1050, 0.5, 256, false
					return &e, nil
				})
			return redeployed(sc)
		},
		// More than one preemption in the minute (the rule's rate above 1/min) while the cache was
		// mostly free on average over the same minute.
		mechanism: func(a, _ window) bool {
			return a.preemptions > 1 && a.usage/a.span < 0.9
		},
		alsoTrips: []string{RuleKVCacheSaturated, RulePastTheKnee},
	},
	RuleQueueWithFreeCache: {
		build: func() Scenario {
			sc := faulty(RuleQueueWithFreeCache,
				"redeployed with max_num_batched_tokens 32 and max_num_seqs 32: the engine cannot prefill as fast as requests arrive, "+
					"the queue grows while the cache stays nearly empty; the redeploy that restores the flags drops the queue",
				nil,
				func(e EngineConfig, _ Load) (*EngineConfig, *Load) {
					e.MaxNumBatchedTokens, e.MaxNumSeqs = 32, 32
					return &e, nil
				})
			return redeployed(sc)
		},
		// A fifth of the requests waited while the cache stayed mostly free.
		mechanism: func(a, _ window) bool {
			return waitRatio(a) > 0.2 && a.usage/a.span < 0.7
		},
	},
	RuleQueueDeferred: {
		build: func() Scenario {
			return faulty(RuleQueueDeferred,
				"an instance serving LoRA adapters with --max-loras 2: 30% of requests ask for one of two adapters, which always fit; "+
					"a new tenant brings six more adapters, and 60% of requests ask for one of eight, so those whose adapter finds "+
					"no slot are deferred until a running adapter has no request left, while the KV cache stays mostly free",
				func(in *Instance) {
					in.Engine.MaxLoras = 2
					in.Load.LoRAFraction, in.Load.Adapters = 0.3, 2
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.LoRAFraction, l.Adapters = 0.6, 8
					return nil, &l
				})
		},
		// More than a fifth of the requests waited deferred while the cache stayed mostly free.
		mechanism: func(a, _ window) bool {
			return a.running+a.waiting > 0 && a.deferred/(a.running+a.waiting) > 0.2 && a.usage/a.span < 0.85
		},
		v0Rule: RuleQueueWithFreeCache,
		// Deferred requests' first tokens come late while the others' do not: TTFT p99/p50 > 2.
		alsoTrips: []string{RulePrefillBlocking},
	},
	RulePastTheKnee: {
		build: func() Scenario {
			return faulty(RulePastTheKnee,
				"traffic rises from 4 to 9 requests a second against max_num_seqs 64 sized to the KV pool: the cache is full and the queue grows, "+
					"and drains within minutes of the fault's end",
				func(in *Instance) {
					in.Engine.MaxNumSeqs = 64
					in.Engine.NumGPUBlocks = 2400
					in.Load.SuffixTokens.CV, in.Load.OutputTokens.CV = 0.2, 0.2
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.RatePerSecond = 9
					return nil, &l
				})
		},
		// A fifth of the requests waited with the cache nearly full.
		mechanism: func(a, _ window) bool {
			return waitRatio(a) > 0.2 && a.usage/a.span >= 0.85
		},
	},
	RuleClientTimeouts: {
		build: func() Scenario {
			return faulty(RuleClientTimeouts,
				"a client with a 2.5 s timeout: answers take ~3 s, so about half the requests are aborted",
				nil,
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.ClientTimeout = 2.5
					return nil, &l
				})
		},
		// Clients gave up on more than 5% of the requests.
		mechanism: func(a, _ window) bool {
			return a.finished > 0 && float64(a.aborted)/float64(a.finished) > 0.05
		},
	},
	RuleOutputsTruncated: {
		build: func() Scenario {
			return faulty(RuleOutputsTruncated,
				"a client release sends max_tokens 128 while answers want ~150 tokens: about half of them stop at the limit, "+
					"fast and cut short",
				nil,
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.MaxTokens = 128
					return nil, &l
				})
		},
		// More than a fifth of the finished requests stopped at their length limit, at least 1.5×
		// the share before the fault.
		mechanism: func(a, base window) bool {
			share := mean(float64(a.truncated), a.finished)
			return share > 0.2 && share >= 1.5*mean(float64(base.truncated), base.finished)
		},
	},
	RulePrefillBound: {
		build: func() Scenario {
			return faulty(RulePrefillBound,
				"two requests a second with ~1200-token prompts (1024 of them a cached system prompt); a RAG pipeline then adds ~2400 tokens of "+
					"retrieved context to every prompt (~3400 tokens): TTFT and prefill time rise together, proportionally",
				func(in *Instance) {
					in.Engine.NumGPUBlocks = 24000
					in.Load.RatePerSecond = 2
					in.Load.SuffixTokens = Dist{Mean: 200, CV: 0.5, Min: 8}
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.SuffixTokens = Dist{Mean: 2400, CV: 0.1, Min: 8}
					return nil, &l
				})
		},
		// Prompts at least twice as long as before.
		mechanism: func(a, base window) bool {
			return a.firstTokens > 0 && base.firstTokens > 0 &&
				mean(float64(a.promptTokens), a.firstTokens) >= 2*mean(float64(base.promptTokens), base.firstTokens)
		},
	},
	RuleDecodeBound: {
		build: func() Scenario {
			return faulty(RuleDecodeBound,
				"traffic rises to 5 requests a second with 340-token answers: the batch widens to a few hundred sequences and each decode step "+
					"reads far more KV, yet the engine keeps up (no queue)",
				func(in *Instance) {
					in.Engine.NumGPUBlocks, in.Engine.MaxNumSeqs = 32000, 1024
				},
				func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
					l.RatePerSecond = 5
					l.OutputTokens = Dist{Mean: 340, CV: 0.5, Min: 4}
					return nil, &l
				})
		},
		// Each decode step at least twice as slow as before.
		mechanism: func(a, base window) bool {
			return a.itlCount > 0 && base.itlCount > 0 && mean(a.itl, a.itlCount) >= 2*mean(base.itl, base.itlCount)
		},
	},
}

// faulty builds a rule's scenario, named by the rule: its second instance runs with engine and
// load (adjusted by setup) and switches, during the fault, to what fault returns.
func faulty(rule, desc string, setup func(*Instance), fault func(EngineConfig, Load) (*EngineConfig, *Load)) Scenario {
	in := fleet()
	if setup != nil {
		setup(&in[1])
	}
	e, l := fault(in[1].Engine, in[1].Load)
	in[1].Faults = []Fault{{Rule: rule, From: FaultFrom, To: FaultTo, Engine: e, Load: l}}
	return Scenario{Name: rule, Description: desc, Seed: 42, Instances: in}
}

// redeployDowntime is how long a redeployed vLLM serves nothing: the process restarts and loads
// the model's weights again.
const redeployDowntime = 30

// redeployed makes a scenario's engine faults flag changes, which vLLM reads only at start: the
// faulty instance restarts into the fault and out of it, losing its queue each time.
func redeployed(sc Scenario) Scenario {
	for i := range sc.Instances {
		for j := range sc.Instances[i].Faults {
			f := &sc.Instances[i].Faults[j]
			f.Redeploy, f.Downtime = f.Engine != nil, redeployDowntime
		}
	}
	return sc
}
