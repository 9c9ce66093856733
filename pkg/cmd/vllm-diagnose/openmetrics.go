package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Metric families of --output prometheus.
const (
	alertMetric     = "vllm_diagnosis_alert"
	evaluatedMetric = "vllm_diagnosis_evaluation_timestamp_seconds"
)

// writeOpenMetrics writes the plugin's alert series (format alert: one series per rule,
// severity, instance and model, 1 while the condition holds) as OpenMetrics gauges holding
// each series' last value, for node_exporter's textfile collector. The samples carry no
// timestamp: the textfile collector refuses them; the evaluation time is a gauge of its own.
func writeOpenMetrics(w io.Writer, alerts data.Frames, at time.Time) error {
	alert := &dto.MetricFamily{
		Name: proto.String(alertMetric),
		Help: proto.String("1 while the vLLM Diagnosis rule's condition holds on the instance at the end of the range (without the rule's for), else 0"),
		Type: dto.MetricType_GAUGE.Enum(),
	}
	for _, f := range alerts {
		if len(f.Fields) < 2 || f.Fields[1].Len() == 0 || f.Fields[1].Labels == nil {
			continue
		}
		v := f.Fields[1]
		last, ok := v.ConcreteAt(v.Len() - 1)
		if !ok {
			continue
		}
		x, ok := last.(float64)
		if !ok {
			return fmt.Errorf("internal error: alert series %s holds %T, not numbers", f.Name, last)
		}
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(x)}}
		for _, k := range slices.Sorted(maps.Keys(v.Labels)) {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v.Labels[k])})
		}
		alert.Metric = append(alert.Metric, m)
	}
	sort.SliceStable(alert.Metric, func(i, j int) bool { return labelsText(alert.Metric[i]) < labelsText(alert.Metric[j]) })
	evaluated := &dto.MetricFamily{
		Name:   proto.String(evaluatedMetric),
		Help:   proto.String("end of the range vllm-diagnose evaluated, in seconds since the epoch"),
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(at.UnixMilli()) / 1000)}}},
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range []*dto.MetricFamily{alert, evaluated} {
		if len(mf.Metric) == 0 {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

func labelsText(m *dto.Metric) string {
	s := ""
	for _, l := range m.Label {
		s += l.GetName() + "=" + l.GetValue() + ","
	}
	return s
}
