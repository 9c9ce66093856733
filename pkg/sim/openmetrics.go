package sim

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// WriteOpenMetrics writes every scrape of every instance as OpenMetrics text with timestamps,
// the input of `promtool tsdb create-blocks-from openmetrics`. Each series carries the
// instance and job labels Prometheus would have added; counter families are named without
// their _total suffix, as OpenMetrics requires, so they are stored under the scraped name.
func (r *Result) WriteOpenMetrics(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	names := map[string]bool{}
	for _, st := range r.stores {
		for n := range st.families {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		var head *family
		for _, st := range r.stores {
			if f := st.families[name]; f != nil {
				if head == nil {
					head = f
					writeHeader(bw, f)
				}
				for _, s := range f.order {
					writeSeries(bw, f, s)
				}
			}
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

func familyName(f *family) string {
	if f.typ == dto.MetricType_COUNTER {
		return strings.TrimSuffix(f.name, "_total")
	}
	return f.name
}

func writeHeader(w *bufio.Writer, f *family) {
	typ := "gauge"
	switch f.typ {
	case dto.MetricType_COUNTER:
		typ = "counter"
	case dto.MetricType_HISTOGRAM:
		typ = "histogram"
	}
	name := familyName(f)
	w.WriteString("# TYPE " + name + " " + typ + "\n")
	w.WriteString("# HELP " + name + " " + escape(f.help) + "\n")
}

func writeSeries(w *bufio.Writer, f *family, s *series) {
	var lb strings.Builder
	for i, l := range s.labels {
		if i > 0 {
			lb.WriteByte(',')
		}
		lb.WriteString(l[0] + `="` + escape(l[1]) + `"`)
	}
	labels := lb.String()
	width := s.width()
	for i, at := range s.times {
		ts := " " + strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64) + "\n"
		row := s.rows[i*width : (i+1)*width]
		switch f.typ {
		case dto.MetricType_COUNTER:
			w.WriteString(f.name + "{" + labels + "} " + formatValue(row[0]) + ts)
		case dto.MetricType_GAUGE:
			w.WriteString(f.name + "{" + labels + "} " + formatValue(row[0]) + ts)
		case dto.MetricType_HISTOGRAM:
			for j, b := range s.bounds {
				w.WriteString(f.name + "_bucket{" + labels + `,le="` + formatLe(b) + `"} ` + formatValue(row[j]) + ts)
			}
			count, sum := row[len(s.bounds)], row[len(s.bounds)+1]
			w.WriteString(f.name + "_bucket{" + labels + `,le="+Inf"} ` + formatValue(count) + ts)
			w.WriteString(f.name + "_count{" + labels + "} " + formatValue(count) + ts)
			w.WriteString(f.name + "_sum{" + labels + "} " + formatValue(sum) + ts)
		}
	}
}

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escape(s string) string { return escaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// formatLe prints a bucket bound as Prometheus normalises it ("1.0", not "1"), so that
// backfilled series carry the same le values as scraped ones.
func formatLe(v float64) string {
	s := formatValue(v)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}
