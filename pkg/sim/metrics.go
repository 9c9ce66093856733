package sim

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// metricSet is one vLLM server's /metrics: a registry holding the families of its
// generation, with vLLM's names, help texts, labels and buckets from package vllm.
type metricSet struct {
	reg *prometheus.Registry
	// scraped is the registry as the instance's scrape job sees it (its Exposition).
	scraped prometheus.Gatherer
	v0      bool

	running, waiting, kvUsage           prometheus.Gauge
	waitingCapacity, waitingDeferred    prometheus.Gauge
	prefixQueries, prefixHits, cachedTk prometheus.Counter
	preemptions, promptTokens, genTk    prometheus.Counter
	success                             map[string]prometheus.Counter
	reqPrompt, reqGen, iteration        prometheus.Observer
	maxTokens                           prometheus.Observer // nil in V0
	ttft, itl, tpot, e2e                prometheus.Observer
	queue, prefill, decode, inference   prometheus.Observer
	queueV0                             prometheus.Observer // V0's time_in_queue_requests
	specDrafts, specDraftTk, specAccTk  prometheus.Counter
	specPerPos                          []prometheus.Counter
	cacheInfo                           *prometheus.GaugeVec
	cacheLabels                         prometheus.Labels

	// V0 only: gauges the old engine computed from cumulative counts.
	prefixHitRate, specRate, specEff prometheus.Gauge
	queried, hits                    float64
	draftTokens, accepted            float64
}

// cacheInfoLabels are the labels of vllm:cache_config_info that the plugin reads; real servers
// print more, all Python values.
var cacheInfoLabels = []string{"block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization", "num_gpu_blocks"}

func newMetricSet(gen vllm.Generation, model string, cfg EngineConfig, exp Exposition) *metricSet {
	m := &metricSet{reg: prometheus.NewRegistry(), v0: gen == vllm.GenerationV0}
	m.scraped = gatherer{reg: m.reg, exp: exp}
	// vLLM V0 had no engine label: it came with the V1 engine's data parallelism (0.8.4).
	constLabels := prometheus.Labels{vllm.LabelModelName: model, vllm.LabelEngine: "0"}
	if m.v0 {
		delete(constLabels, vllm.LabelEngine)
	}
	describe := func(name string) (string, string) {
		d, ok := vllm.Lookup(name)
		if !ok {
			panic("sim: " + name + " is not in package vllm")
		}
		return d.Name, d.Help
	}
	gauge := func(name string) prometheus.Gauge {
		n, h := describe(name)
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: constLabels})
		m.reg.MustRegister(g)
		return g
	}
	counter := func(name string) prometheus.Counter {
		n, h := describe(name)
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: n, Help: h, ConstLabels: constLabels})
		m.reg.MustRegister(c)
		return c
	}
	// The families with a label (a finish reason, a waiting reason, a draft position).
	counterVec := func(name, label string) *prometheus.CounterVec {
		n, h := describe(name)
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: n, Help: h, ConstLabels: constLabels}, []string{label})
		m.reg.MustRegister(v)
		return v
	}
	gaugeVec := func(name, label string) *prometheus.GaugeVec {
		n, h := describe(name)
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: constLabels}, []string{label})
		m.reg.MustRegister(v)
		return v
	}
	histogram := func(name string, buckets []float64) prometheus.Observer {
		n, h := describe(name)
		if own, ok := exp.Buckets[name]; ok {
			buckets = own
		}
		if buckets == nil {
			d, _ := vllm.Lookup(name)
			buckets = d.Buckets
		}
		o := prometheus.NewHistogram(prometheus.HistogramOpts{Name: n, Help: h, ConstLabels: constLabels, Buckets: buckets})
		m.reg.MustRegister(o)
		return o
	}
	lengths := buckets125(cfg.MaxModelLen)

	m.running = gauge(vllm.RequestsRunning)
	m.waiting = gauge(vllm.RequestsWaiting)
	m.preemptions = counter(vllm.Preemptions)
	m.promptTokens = counter(vllm.PromptTokens)
	m.genTk = counter(vllm.GenerationTokens)
	success := counterVec(vllm.RequestSuccess, vllm.LabelFinishedReason)
	m.success = map[string]prometheus.Counter{}
	for _, reason := range vllm.FinishedReasons {
		m.success[reason] = success.WithLabelValues(reason)
	}
	m.reqPrompt = histogram(vllm.RequestPromptTokens, lengths)
	m.reqGen = histogram(vllm.RequestGenerationTokens, lengths)
	m.iteration = histogram(vllm.IterationTokens, nil)
	m.ttft = histogram(vllm.TimeToFirstToken, nil)
	m.e2e = histogram(vllm.E2ELatency, nil)

	// The per-phase request histograms exist in both engines: V0 printed them from about 0.6
	// on, beside its older time_in_queue_requests.
	m.queue = histogram(vllm.QueueTime, nil)
	m.inference = histogram(vllm.InferenceTime, nil)
	m.prefill = histogram(vllm.PrefillTime, nil)
	m.decode = histogram(vllm.DecodeTime, nil)
	if m.v0 {
		m.kvUsage = gauge(vllm.GPUCacheUsage)
		gauge(vllm.CPUCacheUsage)
		gauge(vllm.RequestsSwapped)
		m.itl = histogram(vllm.TimePerOutputToken, nil)
		m.queueV0 = histogram(vllm.TimeInQueueRequests, nil)
		if cfg.PrefixCaching {
			m.prefixHitRate = gauge(vllm.GPUPrefixCacheHitRate)
		}
		if cfg.SpecTokens > 0 {
			// V0's gauges are lifetime ratios; its counters of draft and accepted tokens
			// carry the same names as today's.
			m.specRate = gauge(vllm.SpecAcceptanceRateV0)
			m.specEff = gauge(vllm.SpecEfficiencyV0)
			m.specDraftTk = counter(vllm.SpecDraftTokens)
			m.specAccTk = counter(vllm.SpecAcceptedTokens)
		}
	} else {
		byReason := gaugeVec(vllm.RequestsWaitingByReason, vllm.LabelReason)
		m.waitingCapacity = byReason.WithLabelValues("capacity")
		m.waitingDeferred = byReason.WithLabelValues("deferred")
		m.kvUsage = gauge(vllm.KVCacheUsage)
		m.maxTokens = histogram(vllm.RequestParamsMaxTokens, lengths)
		m.prefixQueries = counter(vllm.PrefixCacheQueries)
		m.prefixHits = counter(vllm.PrefixCacheHits)
		m.cachedTk = counter(vllm.PromptTokensCached)
		m.itl = histogram(vllm.InterTokenLatency, nil)
		m.tpot = histogram(vllm.RequestTimePerToken, nil)
		if cfg.SpecTokens > 0 {
			m.specDrafts = counter(vllm.SpecDrafts)
			m.specDraftTk = counter(vllm.SpecDraftTokens)
			m.specAccTk = counter(vllm.SpecAcceptedTokens)
			perPos := counterVec(vllm.SpecAcceptedPerPos, vllm.LabelPosition)
			for i := range cfg.SpecTokens {
				m.specPerPos = append(m.specPerPos, perPos.WithLabelValues(strconv.Itoa(i)))
			}
		}
	}

	infoLabels := append([]string(nil), cacheInfoLabels...)
	if !m.v0 {
		infoLabels = append(infoLabels, vllm.LabelEngine)
	}
	n, h := describe(vllm.CacheConfigInfo)
	m.cacheInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: n, Help: h}, infoLabels)
	m.reg.MustRegister(m.cacheInfo)
	m.setCacheConfig(cfg)
	return m
}

// setCacheConfig publishes the engine's cache settings, replacing the previous series.
func (m *metricSet) setCacheConfig(cfg EngineConfig) {
	if m.cacheLabels != nil {
		m.cacheInfo.Delete(m.cacheLabels)
	}
	m.cacheLabels = prometheus.Labels{
		"block_size":             strconv.Itoa(cfg.BlockSize),
		"cache_dtype":            cfg.CacheDType,
		"enable_prefix_caching":  pyBool(cfg.PrefixCaching),
		"gpu_memory_utilization": pyFloat(cfg.GPUMemoryUtilization),
		"num_gpu_blocks":         strconv.Itoa(cfg.blocks()),
	}
	if !m.v0 {
		m.cacheLabels[vllm.LabelEngine] = "0"
	}
	m.cacheInfo.With(m.cacheLabels).Set(1)
}

func (m *metricSet) setState(running, waiting, deferred int, usage float64) {
	m.running.Set(float64(running))
	m.waiting.Set(float64(waiting))
	if m.waitingCapacity != nil {
		m.waitingCapacity.Set(float64(waiting - deferred))
		m.waitingDeferred.Set(float64(deferred))
	}
	m.kvUsage.Set(usage)
}

func (m *metricSet) prefixLookup(queried, hit int) {
	if m.v0 {
		m.queried += float64(queried)
		m.hits += float64(hit)
		if m.prefixHitRate != nil && m.queried > 0 {
			m.prefixHitRate.Set(m.hits / m.queried)
		}
		return
	}
	m.prefixQueries.Add(float64(queried))
	m.prefixHits.Add(float64(hit))
}

func (m *metricSet) spec(drafts, draftTokens, accepted int, perPos []int) {
	if m.v0 {
		m.draftTokens += float64(draftTokens)
		m.accepted += float64(accepted)
		if m.specRate != nil && m.draftTokens > 0 {
			m.specRate.Set(m.accepted / m.draftTokens)
			// V0's efficiency: tokens emitted over the most a step could have emitted.
			m.specEff.Set((m.accepted + float64(drafts)) / (m.draftTokens + float64(drafts)))
			m.specDraftTk.Add(float64(draftTokens))
			m.specAccTk.Add(float64(accepted))
		}
		return
	}
	if m.specDrafts == nil {
		return
	}
	m.specDrafts.Add(float64(drafts))
	m.specDraftTk.Add(float64(draftTokens))
	m.specAccTk.Add(float64(accepted))
	for i, n := range perPos {
		if i < len(m.specPerPos) {
			m.specPerPos[i].Add(float64(n))
		}
	}
}

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to max.
func buckets125(max int) []float64 {
	var out []float64
	for mag := 1; ; mag *= 10 {
		for _, m := range []int{1, 2, 5} {
			if v := m * mag; v <= max {
				out = append(out, float64(v))
			} else {
				return out
			}
		}
	}
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyFloat prints a float as Python's repr does for the values vLLM puts in labels.
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}
