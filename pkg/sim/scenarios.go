package sim

import (
	"fmt"
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

// faulty builds a scenario whose second instance runs with engine and load (adjusted by
// setup) and switches, during the fault, to what fault returns.
func faulty(name, desc, rule string, setup func(*Instance), fault func(EngineConfig, Load) (*EngineConfig, *Load)) Scenario {
	in := fleet()
	if setup != nil {
		setup(&in[1])
	}
	e, l := fault(in[1].Engine, in[1].Load)
	in[1].Faults = []Fault{{Rule: rule, From: FaultFrom, To: FaultTo, Engine: e, Load: l}}
	return Scenario{Name: name, Description: desc, Seed: 42, Instances: in}
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
	blocking := catalogue[RulePrefillBlocking]().Instances[1]
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

// bucket_layouts builds on the catalogue's prefill_blocking scenario, so it joins it after.
func init() { catalogue["bucket_layouts"] = bucketLayouts }

var catalogue = map[string]func() Scenario{
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
	RulePrefillBlocking: func() Scenario {
		return faulty(RulePrefillBlocking,
			"chunked prefill off; during the fault 4% of prompts carry a 15k-token document, prefilled whole in ~0.9 s steps that stall everyone",
			RulePrefillBlocking,
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
	RuleTokenBudgetStarved: func() Scenario {
		sc := faulty(RuleTokenBudgetStarved,
			"a document pipeline (fixed-size chunks of ~500 tokens behind shared instructions, 1.8 requests a second, max_num_seqs 48) "+
				"is redeployed with max_num_batched_tokens 48: every prompt is prefilled in many small chunks, one prefill after "+
				"another, so TTFT p50 and p99 both rise while the queue stays shorter than the prefills",
			RuleTokenBudgetStarved,
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
	RulePrefixCacheMiss: func() Scenario {
		return faulty(RulePrefixCacheMiss,
			"a 7000-token shared system prompt; during the fault it carries a per-request timestamp, so no prompt shares its prefix",
			RulePrefixCacheMiss,
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
	RuleSpecDecodeInefficient: func() Scenario {
		return faulty(RuleSpecDecodeInefficient,
			"speculative decoding with 3 draft tokens; during the fault clients sample at temperature 1.0 and the drafter's acceptance drops from 0.85 to 0.35 per token",
			RuleSpecDecodeInefficient,
			func(in *Instance) {
				in.Engine.SpecTokens, in.Engine.SpecAcceptance = 3, 0.85
			},
			func(e EngineConfig, l Load) (*EngineConfig, *Load) {
				e.SpecAcceptance = 0.35
				l.Temperature = 1.0
				return &e, &l
			})
	},
	RuleKVCacheSaturated: func() Scenario {
		return faulty(RuleKVCacheSaturated,
			"a client switches to long answers (~1200 tokens, 1.1 requests a second): the running requests outgrow the KV pool and are preempted; "+
				"the queue of preempted requests drains within minutes of the fault's end",
			RuleKVCacheSaturated, nil,
			func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
				l.OutputTokens = Dist{Mean: 1200, CV: 0.3, Min: 64}
				l.MaxTokens = 2048
				l.RatePerSecond = 1.1
				return nil, &l
			})
	},
	RulePreemptionsFreeCache: func() Scenario {
		sc := faulty(RulePreemptionsFreeCache,
			"an extraction pipeline (1.5 requests a second: ~3200-token documents behind short instructions, ~40-token answers) "+
				"is redeployed onto a GPU shared with another model: --gpu-memory-utilization 0.5 leaves a 1050-block pool "+
				"(16,800 tokens, about five documents), --max-num-seqs is raised to 256 and prefix caching is off; when arrivals bunch "+
				"the pool runs out for a moment and the newest request is preempted, until an answer finishes and frees its document, "+
				"so preemptions come every minute while the cache is mostly free on average; the redeploy back restores the pool",
			RulePreemptionsFreeCache,
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
	RuleQueueWithFreeCache: func() Scenario {
		sc := faulty(RuleQueueWithFreeCache,
			"redeployed with max_num_batched_tokens 32 and max_num_seqs 32: the engine cannot prefill as fast as requests arrive, "+
				"the queue grows while the cache stays nearly empty; the redeploy that restores the flags drops the queue",
			RuleQueueWithFreeCache, nil,
			func(e EngineConfig, _ Load) (*EngineConfig, *Load) {
				e.MaxNumBatchedTokens, e.MaxNumSeqs = 32, 32
				return &e, nil
			})
		return redeployed(sc)
	},
	RulePastTheKnee: func() Scenario {
		return faulty(RulePastTheKnee,
			"traffic rises from 4 to 9 requests a second against max_num_seqs 64 sized to the KV pool: the cache is full and the queue grows, "+
				"and drains within minutes of the fault's end",
			RulePastTheKnee,
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
	RuleClientTimeouts: func() Scenario {
		return faulty(RuleClientTimeouts,
			"a client with a 2.5 s timeout: answers take ~3 s, so about half the requests are aborted",
			RuleClientTimeouts, nil,
			func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
				l.ClientTimeout = 2.5
				return nil, &l
			})
	},
	RulePrefillBound: func() Scenario {
		return faulty(RulePrefillBound,
			"two requests a second with ~1200-token prompts (1024 of them a cached system prompt); a RAG pipeline then adds ~2400 tokens of "+
				"retrieved context to every prompt (~3400 tokens): TTFT and prefill time rise together, proportionally",
			RulePrefillBound,
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
	RuleDecodeBound: func() Scenario {
		return faulty(RuleDecodeBound,
			"traffic rises to 5 requests a second with 340-token answers: the batch widens to a few hundred sequences and each decode step "+
				"reads far more KV, yet the engine keeps up (no queue)",
			RuleDecodeBound,
			func(in *Instance) {
				in.Engine.NumGPUBlocks, in.Engine.MaxNumSeqs = 32000, 1024
			},
			func(_ EngineConfig, l Load) (*EngineConfig, *Load) {
				l.RatePerSecond = 5
				l.OutputTokens = Dist{Mean: 340, CV: 0.5, Min: 4}
				return nil, &l
			})
	},
}

// Scenarios lists the names of the built-in scenarios, sorted.
func Scenarios() []string {
	names := make([]string, 0, len(catalogue))
	for n := range catalogue {
		names = append(names, n)
	}
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
	f, ok := catalogue[name]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q; known scenarios: %s, and %sN (a fleet of N instances)", name, strings.Join(Scenarios(), ", "), FleetPrefix)
	}
	return f(), nil
}

// FaultRules lists the matrix rules that have a scenario of their own.
func FaultRules() []string {
	var out []string
	for n := range catalogue {
		if knownRules[n] && n != faultRestart {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
