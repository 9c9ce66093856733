package sim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Models served by the scenarios' instances.
const (
	ModelLlama = "meta-llama/Llama-3.1-8B-Instruct"
	ModelQwen  = "Qwen/Qwen2.5-7B-Instruct"
)

// Faults of the catalogue strike instance FaultyInstance from FaultFrom to FaultTo of the run
// (minutes 20 to 40 of an hour); the other instances stay healthy.
const (
	FaultyInstance = "127.0.0.1:8001"
	FaultFrom      = 1.0 / 3
	FaultTo        = 2.0 / 3
)

// baseEngine is an 8B model on one 80 GB GPU, priced so that a step of a dozen decoding
// sequences takes about 15 ms and prefill runs at about 16k tokens per second.
func baseEngine() EngineConfig {
	return EngineConfig{
		MaxNumBatchedTokens: 2048, MaxNumSeqs: 128, MaxModelLen: 8192, ChunkedPrefill: true,
		BlockSize: 16, NumGPUBlocks: 4000, CacheDType: "auto", GPUMemoryUtilization: 0.9, PrefixCaching: true,
		Cost: CostModel{StepOverhead: 0.012, PerPrefillToken: 60e-6, PerDecodeSeq: 0.2e-3, PerContextToken: 0.2e-6, PerDraftToken: 0.15},
	}
}

// baseLoad is a chat workload: one of four 1024-token system prompts (instructions and
// examples), a 400-token question,
// a 150-token answer, four requests a second.
func baseLoad() Load {
	return Load{
		RatePerSecond: 4, PrefixTokens: 1024, NumPrefixes: 4,
		SuffixTokens: Dist{Mean: 400, CV: 0.5, Min: 8},
		OutputTokens: Dist{Mean: 150, CV: 0.5, Min: 4},
		MaxTokens:    1024, Temperature: 0.7, TopP: 0.95,
	}
}

// fleet is three healthy instances: two serving Llama, one Qwen.
func fleet() []Instance {
	return []Instance{
		{Address: "127.0.0.1:8000", Model: ModelLlama, Engine: baseEngine(), Load: baseLoad()},
		{Address: FaultyInstance, Model: ModelLlama, Engine: baseEngine(), Load: baseLoad()},
		{Address: "127.0.0.1:8002", Model: ModelQwen, Engine: baseEngine(), Load: baseLoad()},
	}
}

// Bucket layouts of the bucket_layouts scenario: vLLM's TTFT buckets without 0.25 to 1 s, as a
// metric_relabel_configs drop leaves them, and the layout vLLM used before April 2025 (up to 10 s).
var (
	ThinnedTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 2.5, 5.0, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	OldTTFTBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10}
)

// bucketLayouts is four instances whose TTFT histograms differ, side by side in one Prometheus:
// a healthy one whose scrape job keeps only some buckets, so that its p99 falls in the wide
// (0.1, 2.5] bucket and interpolates far above twice its p50 without the bounds making that
// certain; the prefill_blocking scenario's faulty instance with vLLM's buckets; a healthy one
// and a blocking one with vLLM's older layout.
func bucketLayouts() Scenario {
	blocking := faults[RulePrefillBlocking].build().Instances[1]
	healthy := fleet()
	thinned := healthy[0]
	thinned.Exposition.KeepBuckets = map[string][]float64{vllm.TimeToFirstToken: ThinnedTTFTBuckets}
	old := healthy[2]
	old.Exposition.Buckets = map[string][]float64{vllm.TimeToFirstToken: OldTTFTBuckets}
	oldBlocking := blocking
	oldBlocking.Address = "127.0.0.1:8003"
	oldBlocking.Exposition.Buckets = map[string][]float64{vllm.TimeToFirstToken: OldTTFTBuckets}
	return Scenario{Name: "bucket_layouts", Seed: 42, Instances: []Instance{thinned, blocking, old, oldBlocking},
		Description: "four TTFT bucket layouts in one Prometheus: a healthy instance whose scrape keeps only some le buckets " +
			"(its interpolated p99/p50 far above 2, not certain from its own bounds), the prefill_blocking fault with vLLM's buckets, " +
			"and a healthy and a blocking instance with the pre-2025 layout"}
}

// SpecByBatch is the scenario in which speculative decoding pays at small batches and costs at
// large ones: a drafter whose tokens cost 1.2 decoding sequences each of the target's step,
// accepted with probability 0.35 per position (3 per draft). At a handful of running sequences
// the step's fixed overhead dominates and the 1.5 tokens a draft yields per step pay for it; at
// a few dozen the drafts' per-sequence cost does not.
const SpecByBatch = "spec_pays_at_low_batch"

// specByBatch is three Llama instances with long answers: FaultyInstance speculates, light
// traffic for the first half of the run and heavy for the second; its peers do not, one light
// and one heavy throughout, so a step's cost without drafts is seen at both batch sizes.
func specByBatch() Scenario {
	light := baseLoad()
	light.RatePerSecond, light.MaxTokens = 0.5, 2048
	light.OutputTokens = Dist{Mean: 600, CV: 0.5, Min: 4}
	heavy := light
	heavy.RatePerSecond = 1.5
	engine := baseEngine()
	engine.NumGPUBlocks = 16000
	spec := engine
	spec.SpecTokens, spec.SpecAcceptance, spec.Cost.PerDraftToken = 3, 0.35, 1.2
	return Scenario{Name: SpecByBatch, Seed: 42, Instances: []Instance{
		{Address: "127.0.0.1:8000", Model: ModelLlama, Engine: engine, Load: light},
		{Address: FaultyInstance, Model: ModelLlama, Engine: spec, Load: light,
			Faults: []Fault{{Rule: RuleSpecDecodeInefficient, From: 0.5, To: 1, Load: &heavy}}},
		{Address: "127.0.0.1:8002", Model: ModelLlama, Engine: engine, Load: heavy},
	}, Description: "speculative decoding (3 draft tokens, acceptance 0.35 per position, a draft token costing 1.2 decoding " +
		"sequences) on " + FaultyInstance + ", half a request a second for the first half of the run and 1.5 for the second; " +
		"its peers of the model without speculation carry each load throughout: speculation pays at the light load's batch and costs at the heavy one's"}
}

// BudgetAboveNeed is the scenario whose token budget is already above what queue_with_free_cache
// would compute, while --max-num-seqs holds the queue.
const BudgetAboveNeed = "budget_above_need"

// budgetAboveNeed is queue_with_free_cache's fault with the token budget far above need: a
// retrieval service (four 128-token instructions, ~500-token passages, prefix caching off, four
// requests a second) is redeployed with a config copied from a smaller GPU's, max_num_seqs 8,
// and max_num_batched_tokens raised to 8192. Eight sequences cannot serve four requests a second,
// so the queue grows while the cache stays nearly empty; engine steps take a whole prompt, and
// two when two seats free at once, so they reach past 1024 tokens, above the ~900 a p95 prompt
// and the running decodes need. Raising the budget further would change nothing: the advice must
// point at --max-num-seqs, never "raise" the budget to a value below its own.
func budgetAboveNeed() Scenario {
	sc := faulty(RuleQueueWithFreeCache,
		"a retrieval service (128-token instructions, ~500-token passages, prefix caching off) is redeployed with max_num_seqs 8 "+
			"and max_num_batched_tokens 8192: the queue grows with the KV cache nearly empty while steps take whole prompts, "+
			"more tokens than the prompts need; --max-num-seqs, not the budget, holds the queue; the redeploy back drops it",
		func(in *Instance) {
			in.Engine.PrefixCaching = false
			in.Load.PrefixTokens = 128
			in.Load.SuffixTokens = Dist{Mean: 500, CV: 0.3, Min: 8}
		},
		func(e EngineConfig, _ Load) (*EngineConfig, *Load) {
			e.MaxNumSeqs, e.MaxNumBatchedTokens = 8, 8192
			return &e, nil
		})
	sc = redeployed(sc)
	sc.Name = BudgetAboveNeed
	return sc
}

// PrefixMissUnderPreemption is the scenario of two faults at once on FaultyInstance: its KV cache
// saturates (kv_cache_saturated's fault) while its system prompt stops being byte-identical
// (prefix_cache_miss's).
const PrefixMissUnderPreemption = "prefix_miss_under_preemption"

// timestampAt is where prefix_miss_under_preemption's timestamp sits in the system prompt: the
// tokens before it still match across requests.
const timestampAt = 640

// prefixMissUnderPreemption strikes the faulty instance with kv_cache_saturated's load and
// prefix_cache_miss's per-request system prompt together. Preempted requests are admitted again
// and look their prompts up once more; those lookups hit the blocks they had computed, still
// cached, so the exported hit rate stays above prefix_cache_miss's threshold while no first-time
// lookup hits. Each fault carries the load of both, since a fault replaces the instance's load.
func prefixMissUnderPreemption() Scenario {
	sc := faults[RuleKVCacheSaturated].build()
	f := &sc.Instances[1].Faults[0]
	l := *f.Load
	l.SuffixTokens.Mean += float64(l.PrefixTokens - timestampAt)
	l.PrefixTokens = timestampAt
	f.Load = &l
	miss := *f
	miss.Rule = RulePrefixCacheMiss
	sc.Instances[1].Faults = append(sc.Instances[1].Faults, miss)
	sc.Name = PrefixMissUnderPreemption
	sc.Description = "kv_cache_saturated's long answers and prefix_cache_miss's per-request timestamp in the system prompt at once: " +
		"the preempted requests' recomputes hit their own cached blocks, which lifts the exported prefix-cache hit rate " +
		"above 0.5 while no first-time lookup hits"
	return sc
}

// catalogue holds the scenarios that are no rule's: faults holds those.
var catalogue = map[string]func() Scenario{
	PrefixMissUnderPreemption: prefixMissUnderPreemption,
	"bucket_layouts":          bucketLayouts,
	BudgetAboveNeed:           budgetAboveNeed,
	SpecByBatch:               specByBatch,
	"healthy": func() Scenario {
		return Scenario{Name: "healthy", Seed: 42, Instances: fleet(),
			Description: "three instances, two models, steady chat traffic well within capacity: no rule holds"}
	},
	"low_traffic": func() Scenario {
		in := fleet()
		for i := range in {
			in[i].Load.RatePerSecond = 0.05
		}
		return Scenario{Name: "low_traffic", Seed: 42, Instances: in,
			Description: "three requests a minute per instance: too few for any quantile rule, so no finding"}
	},
	"restart": func() Scenario {
		in := fleet()
		in[1].Faults = []Fault{{Rule: faultRestart, From: 0.5, To: 0.5 + 1e-9, Restart: true, Downtime: 30}}
		return Scenario{Name: "restart", Seed: 42, Instances: in,
			Description: FaultyInstance + " restarts halfway (30 s down): its counters reset, rates must not spike; no finding"}
	},
}

// Scenarios lists the names of the built-in scenarios, sorted.
func Scenarios() []string {
	names := append(FaultRules(), slices.Collect(maps.Keys(catalogue))...)
	sort.Strings(names)
	return names
}

// Lookup returns a fresh copy of a built-in scenario, or of Fleet(N) for "fleet-N".
func Lookup(name string) (Scenario, error) {
	if n, ok := strings.CutPrefix(name, FleetPrefix); ok {
		size, err := strconv.Atoi(n)
		if err != nil {
			return Scenario{}, fmt.Errorf("scenario %q: want %sN with N a number of instances, such as %s14", name, FleetPrefix, FleetPrefix)
		}
		return Fleet(size)
	}
	if f, ok := faults[name]; ok {
		return f.build(), nil
	}
	f, ok := catalogue[name]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q; known scenarios: %s, and %sN (a fleet of N instances)", name, strings.Join(Scenarios(), ", "), FleetPrefix)
	}
	return f(), nil
}

// LookupGeneration is Lookup with the scenario's metric vocabulary set: vllm.GenerationV0 or
// vllm.GenerationV1; empty keeps the scenario's own.
func LookupGeneration(name string, generation vllm.Generation) (Scenario, error) {
	switch generation {
	case "", vllm.GenerationV0, vllm.GenerationV1:
	default:
		return Scenario{}, fmt.Errorf("generation %q: want %s or %s", generation, vllm.GenerationV0, vllm.GenerationV1)
	}
	sc, err := Lookup(name)
	if err == nil && generation != "" {
		sc.Generation = generation
	}
	return sc, err
}

// FaultRules lists the rules that have a scenario of their own, sorted: each scenario is named
// by its rule's id.
func FaultRules() []string {
	return slices.Sorted(maps.Keys(faults))
}
