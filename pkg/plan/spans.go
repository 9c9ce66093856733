package plan

import "github.com/seed/vllm-datasource/pkg/vllm"

// WithGeneration marks a requests query's searches with the span vocabulary of the metrics'
// generation g (traces.Query.Generation): a vLLM engine's spans and its metrics share their
// generation, so a backend that returns only the attributes it asks for (Tempo) asks for those
// the spans carry. GenerationNone, when the metrics could not be read, asks for either
// generation's. It marks s.Queries in place and returns s.
func (s Searches) WithGeneration(g vllm.Generation) Searches {
	for i := range s.Queries {
		s.Queries[i].Generation = g
	}
	return s
}
