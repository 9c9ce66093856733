package embedprom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// maxSamplesInAppender is promtool's default for --max-samples-in-appender: an appender is
// committed every this many samples, so that memory holds one batch rather than the input.
const maxSamplesInAppender = 5000

// Backfill writes the samples of OpenMetrics text with timestamps (ending in "# EOF") into dir
// as TSDB blocks, as `promtool tsdb create-blocks-from openmetrics` does: the same parser
// (which normalises le and quantile label values as a scrape does), one block per block
// duration, the text read once per block. Call it before Open on the same directory.
func Backfill(dir string, openMetrics []byte) error {
	mint, maxt, err := timeBounds(openMetrics)
	if err != nil {
		return err
	}
	block := blockDuration(maxt - mint)
	for t := block * (mint / block); t <= maxt; t += block {
		if err := writeBlock(dir, openMetrics, t, t+block, block); err != nil {
			return err
		}
	}
	return nil
}

// timeBounds are the first and last timestamps of the text's samples.
func timeBounds(input []byte) (int64, int64, error) {
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	p := textparse.NewOpenMetricsParser(input, nil)
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("OpenMetrics: %w", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		if _, ts, _ := p.Series(); ts == nil {
			return 0, 0, errors.New("OpenMetrics: a sample without a timestamp; backfilled samples need one")
		} else {
			mint, maxt = min(mint, *ts), max(maxt, *ts)
		}
	}
	if maxt < mint {
		return 0, 0, errors.New("OpenMetrics: no samples")
	}
	return mint, maxt, nil
}

// blockDuration is the block range promtool picks for --max-block-duration equal to the
// data's span: TSDB's 2 h, or the largest of its compaction ranges that fits, so that an hour
// or a day of data is read once or twice rather than once per 2 h.
func blockDuration(span int64) int64 {
	d := tsdb.DefaultBlockDuration
	if span <= d {
		return d
	}
	ranges := tsdb.ExponentialBlockRanges(tsdb.DefaultBlockDuration, 10, 3)
	for _, r := range ranges {
		if r > span {
			break
		}
		d = r
	}
	return d
}

// writeBlock writes the samples in [from, to) as one block. The block writer accepts samples
// at most half its range older than its newest, so it is given twice the range, as promtool
// does, and only samples of the range are added.
func writeBlock(dir string, input []byte, from, to, block int64) (err error) {
	w, err := tsdb.NewBlockWriter(promslog.NewNopLogger(), dir, 2*block)
	if err != nil {
		return fmt.Errorf("block writer: %w", err)
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	ctx := context.Background()
	app := w.AppenderV2(ctx)
	p := textparse.NewOpenMetricsParser(input, labels.NewSymbolTable())
	n := 0
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("OpenMetrics: %w", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		if *ts < from || *ts >= to {
			continue
		}
		var l labels.Labels
		p.Labels(&l)
		if _, err := app.Append(0, l, 0, *ts, v, nil, nil, storage.AOptions{}); err != nil {
			return fmt.Errorf("adding %s at %d: %w", l, *ts, err)
		}
		if n++; n == maxSamplesInAppender {
			if err := app.Commit(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			app, n = w.AppenderV2(ctx), 0
		}
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if _, err := w.Flush(ctx); err != nil && !errors.Is(err, tsdb.ErrNoSeriesAppended) {
		return fmt.Errorf("writing the block: %w", err)
	}
	return nil
}
