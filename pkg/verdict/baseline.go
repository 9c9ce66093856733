package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/gtime"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Touch is how far a baseline may reach into the current window and still count as ending
// where it starts. Grafana resolves a dashboard's `now-1h` when it sends the query, and the
// data source resolves the baseline's `now-1h` when it receives it, moments later: the two
// windows touch, and were meant to.
const Touch = time.Minute

// Before is the default baseline: the window as long as current that ends where current
// starts ("the hour before" a one-hour range).
func Before(current Window) Window {
	return Window{From: current.From.Add(-current.To.Sub(current.From)), To: current.From}
}

// CheckBaseline checks that a baseline lies before the current window. Windows that touch are
// not overlapping: a baseline that ends at most Touch after the current window starts is cut
// to end there.
func CheckBaseline(b, current Window) (Window, error) {
	switch {
	case !b.To.After(b.From):
		return Window{}, fmt.Errorf("the baseline ends (%s) before it starts (%s): baselineTo must be after baselineFrom", series.Stamp(b.To), series.Stamp(b.From))
	case !b.From.Before(current.From):
		return Window{}, fmt.Errorf("the baseline (%s to %s) is not before the query's time range (%s to %s): choose a baseline that ends before the range starts", series.Stamp(b.From), series.Stamp(b.To), series.Stamp(current.From), series.Stamp(current.To))
	case b.To.After(current.From.Add(Touch)):
		return Window{}, fmt.Errorf("the baseline (%s to %s) overlaps the query's time range (%s to %s): end it at or before %s", series.Stamp(b.From), series.Stamp(b.To), series.Stamp(current.From), series.Stamp(current.To), series.Stamp(current.From))
	case b.To.After(current.From):
		b.To = current.From
	}
	return b, nil
}

// ParseBaseline reads a query's baseline (RFC 3339, epoch milliseconds, or Grafana's relative
// time such as now-7d) and checks it lies before the current window (CheckBaseline). A
// baseline given by one end lasts as long as the current window; without either end it is the
// window just before the current one (Before), so a verdict panel answers with its defaults.
func ParseBaseline(from, to string, current Window, now time.Time) (Window, error) {
	const forms = "RFC 3339 such as 2026-08-01T10:00:00Z, or relative such as now-7d"
	tr := gtime.TimeRange{From: strings.TrimSpace(from), To: strings.TrimSpace(to), Now: now}
	length := current.To.Sub(current.From)
	var b Window
	var err error
	switch {
	case tr.From == "" && tr.To == "":
		return Before(current), nil
	case tr.From == "":
		if b.To, err = tr.ParseTo(); err != nil {
			return Window{}, fmt.Errorf("baselineTo %q is not a time: write %s", to, forms)
		}
		b.From = b.To.Add(-length)
	default:
		if b.From, err = tr.ParseFrom(); err != nil {
			return Window{}, fmt.Errorf("baselineFrom %q is not a time: write %s", from, forms)
		}
		b.To = b.From.Add(length)
		if tr.To != "" {
			if b.To, err = tr.ParseTo(); err != nil {
				return Window{}, fmt.Errorf("baselineTo %q is not a time: write %s", to, forms)
			}
		}
	}
	return CheckBaseline(b, current)
}
