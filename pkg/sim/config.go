package sim

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Scenario is one simulated fleet: its instances, their load, and the faults that strike them.
// Times inside a scenario are fractions of the run, so one scenario fits any duration.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Generation is the metric vocabulary: vllm.GenerationV1 (the default) or vllm.GenerationV0.
	Generation vllm.Generation `json:"generation,omitempty"`
	// ServiceName is the spans' service.name; empty means vllm.DefaultServiceName.
	ServiceName string `json:"serviceName,omitempty"`
	// SpanModelAttribute sets gen_ai.response.model on spans. Current vLLM omits it (only V0
	// spans carry it); nil means on, because the plugin's join is easier to test with it.
	SpanModelAttribute *bool      `json:"spanModelAttribute,omitempty"`
	Seed               uint64     `json:"seed"`
	Instances          []Instance `json:"instances"`
}

// Instance is one vLLM server: one engine serving one model, scraped at Address.
type Instance struct {
	// Address is host:port, the Prometheus instance label and the spans' service.instance.id.
	Address string       `json:"address"`
	Model   string       `json:"model"`
	Engine  EngineConfig `json:"engine"`
	Load    Load         `json:"load"`
	Faults  []Fault      `json:"faults,omitempty"`
	// Exposition changes what reaches Prometheus (bucket layouts, dropped buckets or families).
	Exposition Exposition `json:"exposition,omitempty"`
}

// EngineConfig mirrors the vLLM flags that shape scheduling, plus the cost of a step.
type EngineConfig struct {
	MaxNumBatchedTokens int  `json:"maxNumBatchedTokens"`
	MaxNumSeqs          int  `json:"maxNumSeqs"`
	MaxModelLen         int  `json:"maxModelLen"`
	ChunkedPrefill      bool `json:"chunkedPrefill"`
	BlockSize           int  `json:"blockSize"`
	// NumGPUBlocks is the pool at cache_dtype "auto"; "fp8" halves the bytes per block, so the
	// same memory holds twice as many blocks.
	NumGPUBlocks         int     `json:"numGpuBlocks"`
	CacheDType           string  `json:"cacheDtype"`
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization"`
	PrefixCaching        bool    `json:"prefixCaching"`
	// SpecTokens is the number of draft tokens per step (0: no speculative decoding);
	// SpecAcceptance is the probability that each draft token is accepted given that the ones
	// before it were.
	SpecTokens int `json:"specTokens,omitempty"`
	// MaxLoras is --max-loras: how many LoRA adapters can run in one batch (requests of another
	// adapter are deferred until one of them has no running request).
	MaxLoras       int       `json:"maxLoras,omitempty"`
	SpecAcceptance float64   `json:"specAcceptance,omitempty"`
	Cost           CostModel `json:"cost"`
}

// CostModel prices one engine step in seconds: a fixed part (weights read, launch), each
// prefill token, each decoding sequence, and each context token whose KV is read.
type CostModel struct {
	StepOverhead    float64 `json:"stepOverhead"`
	PerPrefillToken float64 `json:"perPrefillToken"`
	PerDecodeSeq    float64 `json:"perDecodeSeq"`
	PerContextToken float64 `json:"perContextToken"`
	// PerDraftToken is the extra cost of verifying each draft token, as a fraction of a
	// decoding sequence's cost.
	PerDraftToken float64 `json:"perDraftToken,omitempty"`
}

// Load is the traffic an instance receives: Poisson arrivals, prompt and output lengths.
type Load struct {
	RatePerSecond float64 `json:"ratePerSecond"`
	// A prompt is a shared prefix (one of NumPrefixes system prompts of PrefixTokens tokens)
	// followed by a unique suffix of SuffixTokens tokens. UniquePrefix models a per-request
	// value (a timestamp, a session id) inside the prefix: no two prompts share it.
	PrefixTokens int  `json:"prefixTokens"`
	NumPrefixes  int  `json:"numPrefixes"`
	UniquePrefix bool `json:"uniquePrefix,omitempty"`
	SuffixTokens Dist `json:"suffixTokens"`
	OutputTokens Dist `json:"outputTokens"`
	// LongFraction of requests carry LongTokens of extra prompt (documents, long contexts).
	LongFraction float64 `json:"longFraction,omitempty"`
	LongTokens   Dist    `json:"longTokens,omitempty"`
	MaxTokens    int     `json:"maxTokens"`
	Temperature  float64 `json:"temperature,omitempty"`
	TopP         float64 `json:"topP,omitempty"`
	// LoRAFraction of requests ask for one of Adapters LoRA adapters, picked uniformly.
	LoRAFraction float64 `json:"loraFraction,omitempty"`
	Adapters     int     `json:"adapters,omitempty"`
	// ClientTimeout in seconds aborts a request the client gave up on (0: clients wait).
	ClientTimeout float64 `json:"clientTimeout,omitempty"`
}

// Dist is a log-normal length distribution given by its mean and coefficient of variation,
// clamped to [Min, Max] when those are set.
type Dist struct {
	Mean float64 `json:"mean"`
	CV   float64 `json:"cv"`
	Min  int     `json:"min,omitempty"`
	Max  int     `json:"max,omitempty"`
}

// Fault replaces an instance's engine configuration or load from From to To (fractions of the
// run); Rule names the diagnosis rule that the change is meant to cause. Restart
// instead restarts the server at From: counters reset, in-flight requests are lost, and the
// server is down for Downtime seconds. Redeploy applies an engine change as an operator does
// with vLLM's flags, which it reads only at start: the server restarts into the fault's
// configuration at From and back into its own at To, down for Downtime seconds each time. Stall
// wedges the engine at From: it takes no step while requests keep arriving and the server keeps
// being scraped, until the operator restarts it at To (down for Downtime seconds).
type Fault struct {
	Rule     string        `json:"rule"`
	From     float64       `json:"from"`
	To       float64       `json:"to"`
	Engine   *EngineConfig `json:"engine,omitempty"`
	Load     *Load         `json:"load,omitempty"`
	Restart  bool          `json:"restart,omitempty"`
	Redeploy bool          `json:"redeploy,omitempty"`
	Stall    bool          `json:"stall,omitempty"`
	Downtime float64       `json:"downtime,omitempty"`
}

// blocks is the pool size the cache dtype gives: fp8 stores a block in half the bytes.
func (c EngineConfig) blocks() int {
	if (vllm.CacheConfig{CacheDType: c.CacheDType}).FP8() {
		return 2 * c.NumGPUBlocks
	}
	return c.NumGPUBlocks
}

func (s Scenario) generation() vllm.Generation {
	if s.Generation == "" {
		return vllm.GenerationV1
	}
	return s.Generation
}

func (s Scenario) serviceName() string {
	if s.ServiceName == "" {
		return vllm.DefaultServiceName
	}
	return s.ServiceName
}

func (s Scenario) spanModel() bool { return s.SpanModelAttribute == nil || *s.SpanModelAttribute }

// Validate reports every invalid value of the scenario, naming where it is.
func (s Scenario) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if g := s.generation(); g != vllm.GenerationV1 && g != vllm.GenerationV0 {
		add("generation %q: want %q or %q", g, vllm.GenerationV1, vllm.GenerationV0)
	}
	if len(s.Instances) == 0 {
		add("no instances: a scenario needs at least one")
	}
	seen := map[string]bool{}
	for i, in := range s.Instances {
		where := fmt.Sprintf("instance %d (%s)", i, in.Address)
		if _, _, err := net.SplitHostPort(in.Address); err != nil {
			add("%s: address must be host:port: %v", where, err)
		}
		if seen[in.Address] {
			add("%s: address used twice", where)
		}
		seen[in.Address] = true
		if strings.TrimSpace(in.Model) == "" {
			add("%s: model is empty", where)
		}
		errs = append(errs, in.Engine.validate(where+": engine")...)
		errs = append(errs, in.Load.validate(where+": load")...)
		errs = append(errs, in.Exposition.validate(where+": exposition")...)
		for j, f := range in.Faults {
			fw := fmt.Sprintf("%s: fault %d (%s)", where, j, f.Rule)
			if _, ok := faults[f.Rule]; !ok && f.Rule != faultRestart {
				add("%s: unknown rule", fw)
			}
			if !(f.From >= 0 && f.From < f.To && f.To <= 1) {
				add("%s: want 0 <= from < to <= 1, got from %v to %v", fw, f.From, f.To)
			}
			if f.Engine != nil {
				errs = append(errs, f.Engine.validate(fw+": engine")...)
			}
			if f.Load != nil {
				errs = append(errs, f.Load.validate(fw+": load")...)
			}
			if f.Restart && f.Redeploy {
				add("%s: a fault is either a restart or a redeploy of new flags, not both", fw)
			}
			if f.Stall && (f.Restart || f.Redeploy) {
				add("%s: a stall ends in a restart of its own: it is neither a restart nor a redeploy", fw)
			}
			if (f.Restart || f.Redeploy) && f.Downtime < 0 {
				add("%s: downtime must not be negative", fw)
			}
		}
	}
	return errors.Join(errs...)
}

func (c EngineConfig) validate(where string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(where+": "+format, a...)) }
	if c.MaxNumBatchedTokens < 1 {
		add("maxNumBatchedTokens must be at least 1, got %d", c.MaxNumBatchedTokens)
	}
	if c.MaxNumSeqs < 1 {
		add("maxNumSeqs must be at least 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxModelLen < 2 {
		add("maxModelLen must be at least 2, got %d", c.MaxModelLen)
	}
	if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		// vLLM refuses this too: each running sequence needs at least one token of the budget.
		add("maxNumBatchedTokens (%d) must be at least maxNumSeqs (%d)", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if !c.ChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen {
		// vLLM refuses this too: without chunking a whole prompt must fit in one step.
		add("without chunked prefill maxNumBatchedTokens (%d) must be at least maxModelLen (%d)", c.MaxNumBatchedTokens, c.MaxModelLen)
	}
	if c.BlockSize < 1 {
		add("blockSize must be at least 1, got %d", c.BlockSize)
	}
	if c.NumGPUBlocks < 1 {
		add("numGpuBlocks must be at least 1, got %d", c.NumGPUBlocks)
	} else if c.BlockSize > 0 && c.blocks()*c.BlockSize < c.MaxModelLen {
		add("the KV pool (%d blocks of %d tokens) cannot hold one request of maxModelLen %d", c.blocks(), c.BlockSize, c.MaxModelLen)
	}
	switch c.CacheDType {
	case "auto", "fp8", "fp8_e4m3", "fp8_e5m2":
	default:
		add("cacheDtype %q: want auto, fp8, fp8_e4m3 or fp8_e5m2", c.CacheDType)
	}
	if !(c.GPUMemoryUtilization > 0 && c.GPUMemoryUtilization <= 1) {
		add("gpuMemoryUtilization must be in (0, 1], got %v", c.GPUMemoryUtilization)
	}
	if c.MaxLoras < 0 {
		add("maxLoras must not be negative, got %d", c.MaxLoras)
	}
	if c.SpecTokens < 0 || c.SpecTokens > 16 {
		add("specTokens must be in [0, 16], got %d", c.SpecTokens)
	}
	if c.SpecTokens > 0 && !(c.SpecAcceptance >= 0 && c.SpecAcceptance <= 1) {
		add("specAcceptance must be in [0, 1], got %v", c.SpecAcceptance)
	}
	k := c.Cost
	for name, v := range map[string]float64{"stepOverhead": k.StepOverhead, "perPrefillToken": k.PerPrefillToken,
		"perDecodeSeq": k.PerDecodeSeq, "perContextToken": k.PerContextToken, "perDraftToken": k.PerDraftToken} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			add("cost %s must be a non-negative number, got %v", name, v)
		}
	}
	if k.StepOverhead <= 0 {
		add("cost stepOverhead must be positive, got %v", k.StepOverhead)
	}
	return errs
}

func (l Load) validate(where string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(where+": "+format, a...)) }
	if !(l.RatePerSecond >= 0) || math.IsInf(l.RatePerSecond, 0) {
		add("ratePerSecond must be a non-negative number, got %v", l.RatePerSecond)
	}
	if l.PrefixTokens < 0 {
		add("prefixTokens must not be negative, got %d", l.PrefixTokens)
	}
	if l.PrefixTokens > 0 && !l.UniquePrefix && l.NumPrefixes < 1 {
		add("numPrefixes must be at least 1 when prefixTokens is set, got %d", l.NumPrefixes)
	}
	for name, d := range map[string]Dist{"suffixTokens": l.SuffixTokens, "outputTokens": l.OutputTokens} {
		if !(d.Mean >= 1) || d.CV < 0 {
			add("%s: mean must be at least 1 and cv non-negative, got mean %v cv %v", name, d.Mean, d.CV)
		}
	}
	if !(l.LongFraction >= 0 && l.LongFraction <= 1) {
		add("longFraction must be in [0, 1], got %v", l.LongFraction)
	}
	if l.LongFraction > 0 && !(l.LongTokens.Mean >= 1) {
		add("longTokens: mean must be at least 1 when longFraction is set, got %v", l.LongTokens.Mean)
	}
	if l.MaxTokens < 1 {
		add("maxTokens must be at least 1, got %d", l.MaxTokens)
	}
	if l.Temperature < 0 || l.TopP < 0 || l.TopP > 1 {
		add("temperature must be non-negative and topP in [0, 1], got %v and %v", l.Temperature, l.TopP)
	}
	if !(l.LoRAFraction >= 0 && l.LoRAFraction <= 1) || l.Adapters < 0 || (l.LoRAFraction > 0 && l.Adapters < 1) {
		add("loraFraction must be in [0, 1] with adapters at least 1 when it is set, got %v and %d", l.LoRAFraction, l.Adapters)
	}
	if l.ClientTimeout < 0 {
		add("clientTimeout must not be negative, got %v", l.ClientTimeout)
	}
	return errs
}
