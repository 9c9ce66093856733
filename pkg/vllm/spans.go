package vllm

// Span vocabulary of vLLM's request tracing. vLLM sends one span per finished request (name
// llm_request, kind SERVER, from arrival to finish, no children; its parent comes from the
// request's traceparent header). Current vLLM (the V1 engine, since about 0.11) always sets the
// latency attributes (TTFT, e2e, queue, prefill, decode, inference, in seconds), the token
// counts and the request id, and sets temperature, top_p, max_tokens and n only when they are
// not zero. V0 engine spans (vLLM 0.8 to 0.10 fell back to it whenever tracing was on) carry the
// response model and their own scheduler and forward times instead of the prefill, decode and
// inference times. vLLM does not set service.name: OTEL_SERVICE_NAME does. TTFT and e2e run on
// the front end's clock, queue, prefill and decode on the engine's, so e2e is about, not
// exactly, their sum.
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
