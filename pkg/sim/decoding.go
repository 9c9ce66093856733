package sim

import "time"

// Decoding is what an instance's finished requests say of its decoding over a window: the mean
// number of requests past their queue (Little's law over the spans' time in the engine) and
// their mean decode time per output token after the first. Ground truth for advice that depends
// on the batch (the spans are the simulator's, never sampled by a backend).
type Decoding struct {
	Requests int
	Running  float64
	TPOT     float64
}

// DecodingOf is Decoding over [from, to) of the requests of instance that started in it.
func (r *Result) DecodingOf(instance string, from, to time.Time) Decoding {
	var d Decoding
	var busy, tpot float64
	for _, sp := range r.Spans {
		if sp.Instance != instance || sp.Start.Before(from) || !sp.Start.Before(to) || sp.CompletionTokens < 2 {
			continue
		}
		d.Requests++
		busy += sp.Prefill + sp.Decode
		tpot += sp.Decode / float64(sp.CompletionTokens-1)
	}
	if d.Requests > 0 {
		d.Running = busy / to.Sub(from).Seconds()
		d.TPOT = tpot / float64(d.Requests)
	}
	return d
}
