package vllm

// Span vocabulary of vLLM's request tracing.
const (
	DefaultServiceName = "vllm"
	DefaultSpanName    = "llm_request"

	AttrTTFT          = "gen_ai.latency.time_to_first_token"
	AttrE2E           = "gen_ai.latency.e2e"
	AttrQueue         = "gen_ai.latency.time_in_queue"
	AttrPrefill       = "gen_ai.latency.time_in_model_prefill"
	AttrDecode        = "gen_ai.latency.time_in_model_decode"
	AttrInference     = "gen_ai.latency.time_in_model_inference"
	AttrPromptTokens  = "gen_ai.usage.prompt_tokens"
	AttrOutputTokens  = "gen_ai.usage.completion_tokens"
	AttrRequestID     = "gen_ai.request.id"
	AttrTemperature   = "gen_ai.request.temperature"
	AttrTopP          = "gen_ai.request.top_p"
	AttrMaxTokens     = "gen_ai.request.max_tokens"
	AttrN             = "gen_ai.request.n"
	AttrResponseModel = "gen_ai.response.model"

	// Attributes of V0 engine spans (vLLM ≤ 0.10 with tracing on).
	AttrNumSequences      = "gen_ai.usage.num_sequences"
	AttrTimeInScheduler   = "gen_ai.latency.time_in_scheduler"
	AttrTimeInForward     = "gen_ai.latency.time_in_model_forward"
	AttrTimeInExecute     = "gen_ai.latency.time_in_model_execute"
	AttrCachedTokens      = "gen_ai.usage.cached_tokens"
	AttrFinishReason      = "gen_ai.response.finish_reasons"
	ResourceServiceName   = "service.name"
	ResourceInstanceID    = "service.instance.id"
	ResourceHostName      = "host.name"
	ResourceInstrumenting = "vllm.instrumenting_module_name"
	ResourceProcessID     = "vllm.process_id"
	DefaultInstanceAttr   = ResourceInstanceID
	DefaultModelAttr      = AttrResponseModel
)
