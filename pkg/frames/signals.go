package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
)

// SignalInfo is how a signal is shown.
type SignalInfo struct {
	Label string
	Unit  string
	// LowerIsWorse: the worst instances by this signal are the lowest.
	LowerIsWorse bool
}

// MedianLabel is the instance label of a signal's median across instances, the reference line
// drawn beside the worst instances (Signals' topK).
const MedianLabel = "fleet median"

// Signals returns one time-series frame per signal and key, labelled with signal, instance and
// model_name (the signal too, so that each series of a query has its own labels, as Grafana's
// alerting needs), in the order the signals were asked for. With topK > 0 and more keys than that
// holding a signal, the signal's frames are those of its topK worst keys (Set.Worst), worst
// first, and then its median across every key, labelled instance MedianLabel. Notices go on
// the first frame.
func Signals(set *series.Set, wanted []series.Signal, info func(series.Signal) SignalInfo, executed string, notices []string, topK int) data.Frames {
	var out data.Frames
	for _, sig := range wanted {
		si := info(sig)
		keys := set.Worst(sig, si.LowerIsWorse)
		if topK <= 0 || len(keys) <= topK {
			eachSeries(set, []series.Signal{sig}, info, func(s *series.Series, si SignalInfo) {
				out = append(out, signalFrame(set.Grid, s, si))
			})
			continue
		}
		for _, k := range keys[:topK] {
			out = append(out, signalFrame(set.Grid, set.Get(k, sig), si))
		}
		median := &series.Series{Signal: sig, Key: series.Key{Instance: MedianLabel}, Values: set.Median(sig)}
		out = append(out, signalFrame(set.Grid, median, si))
	}
	if len(out) == 0 {
		out = data.Frames{data.NewFrame("signals")}
	}
	out[0].Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}, ExecutedQueryString: executed, Notices: warnings(notices)}
	for _, f := range out[1:] {
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
	}
	return out
}

// eachSeries calls fn with each series of the wanted signals, per key, in the order the signals
// were asked for; a signal without a series of a key is skipped.
func eachSeries(set *series.Set, wanted []series.Signal, info func(series.Signal) SignalInfo, fn func(*series.Series, SignalInfo)) {
	for _, sig := range wanted {
		si := info(sig)
		for _, key := range set.Keys() {
			if s := set.Get(key, sig); s != nil {
				fn(s, si)
			}
		}
	}
}

func signalFrame(g series.Grid, s *series.Series, si SignalInfo) *data.Frame {
	times := make([]time.Time, len(s.Values))
	values := make([]*float64, len(s.Values))
	for i, v := range s.Values {
		times[i], values[i] = g.Time(i), optFloat(v)
	}
	labels := KeyLabels(s.Key)
	labels["signal"] = string(s.Signal)
	value := data.NewField("value", labels, values)
	value.Config = &data.FieldConfig{DisplayNameFromDS: displayName(si.Label, s.Key), Unit: si.Unit}
	return data.NewFrame(string(s.Signal), data.NewField("time", nil, times), value)
}

// KeyLabels are the labels of a key's series, named as Prometheus names them for vLLM.
func KeyLabels(k series.Key) data.Labels {
	return data.Labels{"instance": k.Instance, "model_name": k.Model}
}

// displayName names a series instance first ("vllm-03:8000 · llama-3-8b · TTFT p99"): in a
// legend of a fleet, the instance is what a reader looks for.
func displayName(label string, k series.Key) string {
	var parts []string
	for _, p := range []string{k.Instance, k.Model} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, label), " · ")
}
