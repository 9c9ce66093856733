package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// WriteOpenMetrics writes every scrape of every instance as OpenMetrics text with timestamps,
// the input of `promtool tsdb create-blocks-from openmetrics`, through expfmt (the writer
// client_golang serves OpenMetrics with). Each series carries the instance and job labels
// Prometheus would have added; expfmt names counter families without their _total suffix,
// as OpenMetrics requires, and their samples with it, so they are stored under the scraped name.
func (r *Result) WriteOpenMetrics(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := r.writeFamilies(bw); err != nil {
		return err
	}
	if _, err := expfmt.FinalizeOpenMetrics(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// writeFamilies writes the families of WriteOpenMetrics, without the closing "# EOF".
func (r *Result) writeFamilies(bw io.Writer) error {
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
		mf, err := r.metricFamily(name)
		if err != nil {
			return err
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(bw, mf); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// metricFamily is one family's scrapes on every instance, one timestamped metric a scrape, in
// the order OpenMetrics wants: each series whole, its scrapes in time order. The messages are
// allocated in one slice a kind and point into the stored rows, labels and bounds, so that
// writing millions of samples costs a few allocations a family rather than several a sample.
func (r *Result) metricFamily(name string) (*dto.MetricFamily, error) {
	var (
		head *family
		all  []*series
		n    int
	)
	for _, st := range r.stores {
		if f := st.families[name]; f != nil {
			if head == nil {
				head = f
			}
			for _, s := range f.order {
				all = append(all, s)
				n += len(s.times)
			}
		}
	}
	mf := &dto.MetricFamily{Name: &head.name, Help: &head.help, Type: head.typ.Enum(), Metric: make([]*dto.Metric, 0, n)}
	metrics := make([]dto.Metric, n)
	stamps := make([]int64, n)
	var (
		scalars []dto.Gauge
		counts  []dto.Counter
	)
	switch head.typ {
	case dto.MetricType_GAUGE:
		scalars = make([]dto.Gauge, n)
	case dto.MetricType_COUNTER:
		counts = make([]dto.Counter, n)
	case dto.MetricType_HISTOGRAM:
	default:
		return nil, fmt.Errorf("%s: the simulator stores no %s families", name, head.typ)
	}
	k := 0
	for _, s := range all {
		labels := labelPairs(s.labels)
		var hb histogramBuf
		if head.typ == dto.MetricType_HISTOGRAM {
			hb = newHistogramBuf(len(s.times), len(s.bounds))
		}
		width := s.width()
		for i, at := range s.times {
			m := &metrics[k]
			m.Label = labels
			stamps[k] = at.UnixMilli()
			m.TimestampMs = &stamps[k]
			row := s.rows[i*width : (i+1)*width]
			switch head.typ {
			case dto.MetricType_GAUGE:
				scalars[k].Value = &row[0]
				m.Gauge = &scalars[k]
			case dto.MetricType_COUNTER:
				counts[k].Value = &row[0]
				m.Counter = &counts[k]
			case dto.MetricType_HISTOGRAM:
				h, err := hb.histogram(i, s.bounds, row)
				if err != nil {
					return nil, fmt.Errorf("%s at %s: %w", name, at.UTC().Format("15:04:05"), err)
				}
				m.Histogram = h
			}
			mf.Metric = append(mf.Metric, m)
			k++
		}
	}
	return mf, nil
}

func labelPairs(labels [][2]string) []*dto.LabelPair {
	pairs := make([]dto.LabelPair, len(labels))
	out := make([]*dto.LabelPair, len(labels))
	for i := range labels {
		pairs[i].Name, pairs[i].Value = &labels[i][0], &labels[i][1]
		out[i] = &pairs[i]
	}
	return out
}

// histogramBuf holds the messages of one histogram series, one histogram a scrape.
type histogramBuf struct {
	hists   []dto.Histogram
	buckets []dto.Bucket
	ptrs    []*dto.Bucket
	counts  []uint64 // per scrape: the cumulative bucket counts, then the sample count
}

func newHistogramBuf(scrapes, bounds int) histogramBuf {
	return histogramBuf{
		hists:   make([]dto.Histogram, scrapes),
		buckets: make([]dto.Bucket, scrapes*bounds),
		ptrs:    make([]*dto.Bucket, scrapes*bounds),
		counts:  make([]uint64, scrapes*(bounds+1)),
	}
}

// histogram is scrape i's histogram from its stored row (the cumulative buckets, then count,
// then sum). OpenMetrics 1.0 counts are integers: the simulator counts observations, so a
// fractional count is a bug and an error here rather than a rounded sample.
func (b histogramBuf) histogram(i int, bounds, row []float64) (*dto.Histogram, error) {
	nb := len(bounds)
	counts := b.counts[i*(nb+1) : (i+1)*(nb+1)]
	for j, v := range row[:nb+1] {
		if v < 0 || v != math.Trunc(v) || v > math.MaxUint64 {
			return nil, fmt.Errorf("count %v is not a whole number of observations", v)
		}
		counts[j] = uint64(v)
	}
	ptrs := b.ptrs[i*nb : (i+1)*nb]
	for j := range bounds {
		bk := &b.buckets[i*nb+j]
		bk.UpperBound, bk.CumulativeCount = &bounds[j], &counts[j]
		ptrs[j] = bk
	}
	h := &b.hists[i]
	h.Bucket, h.SampleCount, h.SampleSum = ptrs, &counts[nb], &row[nb+1]
	return h, nil
}
