package stack

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plugin"
)

// Grafana's dashboard grid: a gridPos height unit is 30 px, with 8 px between units.
const (
	gridUnitPx   = 30
	gridMarginPx = 8
	// timelineChromePx is what a state timeline panel spends on other than rows: its header,
	// its time axis and its padding (the provisioned timelines hide their legend).
	timelineChromePx = 80
	// minRowPx is the height at which a timeline row's label and band read.
	minRowPx = 20
)

// sizedPanel is the part of a panel the legibility tests read.
type sizedPanel struct {
	Type        string                   `json:"type"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	GridPos     struct{ X, Y, W, H int } `json:"gridPos"`
	Targets     []json.RawMessage        `json:"targets"`
	Panels      []sizedPanel             `json:"panels"`
}

func sizedPanels(t *testing.T, file string) []sizedPanel {
	t.Helper()
	var d struct {
		Panels []sizedPanel `json:"panels"`
	}
	readJSON(t, path("dashboards", file), &d)
	var out []sizedPanel
	var walk func([]sizedPanel)
	walk = func(ps []sizedPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func dashboardFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range loadDashboards(t) {
		out = append(out, d.file)
	}
	return out
}

// Each state timeline's default query draws at most frames.ReadableRows rows (one per
// instance, worst first), and its panel is tall enough for each of them to get minRowPx.
func TestStateTimelinePanelsFitTheirRows(t *testing.T) {
	seen := 0
	for _, file := range dashboardFiles(t) {
		for _, p := range sizedPanels(t, file) {
			if p.Type != "state-timeline" {
				continue
			}
			seen++
			for _, q := range decodeQueries(t, p.Title, p.Targets) {
				if dq, ok := q.(plugin.DiagnosisQuery); !ok || dq.Format != plugin.FormatTimeline || dq.AllRules {
					t.Errorf("%s, %s: %#v is not a timeline query bounded to the readable rows", file, p.Title, q)
				}
			}
			px := p.GridPos.H*gridUnitPx + (p.GridPos.H-1)*gridMarginPx - timelineChromePx
			if px < frames.ReadableRows*minRowPx {
				t.Errorf("%s, %s: height %d gives %d rows %d px each, want at least %d", file, p.Title, p.GridPos.H,
					frames.ReadableRows, px/frames.ReadableRows, minRowPx)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no dashboard has a state timeline")
	}
}

// Every graph's signals query draws the instances worst by its signal, as many as the
// dashboard's topk variable says (a whole number by default).
func TestGraphsDrawTheTopKInstancesOfTheirSignals(t *testing.T) {
	for _, d := range loadDashboards(t) {
		v, ok := d.variable("topk")
		graphs := 0
		for _, p := range sizedPanels(t, d.file) {
			if p.Type != "timeseries" {
				continue
			}
			for _, q := range decodeQueries(t, p.Title, p.Targets) {
				if sq, isSignals := q.(plugin.SignalsQuery); isSignals {
					graphs++
					if sq.TopK != "$topk" {
						t.Errorf("%s, %s: topK %q, want $topk", d.file, p.Title, sq.TopK)
					}
				}
			}
		}
		if graphs == 0 {
			continue
		}
		if !ok {
			t.Errorf("%s: graphs read $topk, which is no variable", d.file)
			continue
		}
		if k, err := strconv.Atoi(topkDefault(t, d.file)); err != nil || k <= 0 || v.Multi || v.IncludeAll {
			t.Errorf("%s: topk defaults to %q (multi %t, all %t), want one whole number of instances", d.file, topkDefault(t, d.file), v.Multi, v.IncludeAll)
		}
	}
}

// topkDefault is the topk variable's current value as provisioned.
func topkDefault(t *testing.T, file string) string {
	t.Helper()
	var d struct {
		Templating struct {
			List []struct {
				Name    string          `json:"name"`
				Current json.RawMessage `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	readJSON(t, path("dashboards", file), &d)
	for _, v := range d.Templating.List {
		if v.Name != "topk" {
			continue
		}
		var c struct {
			Value string `json:"value"`
		}
		if err := json.Unmarshal(v.Current, &c); err != nil {
			t.Fatalf("%s: topk's current value: %v", file, err)
		}
		return c.Value
	}
	return ""
}

// Findings are shaded over graphs for the selected instance only: every findings annotation
// follows the instance variable and asks for one instance's findings (oneInstance), so that
// with every instance selected the graphs stay readable.
func TestFindingAnnotationsFollowTheInstanceSelection(t *testing.T) {
	targets, err := Targets(path("dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tg := range targets {
		if tg.PanelType != "annotation" {
			continue
		}
		q, err := DecodeQuery(tg.JSON)
		if err != nil {
			t.Fatalf("%s, %s: %v", tg.File, tg.Panel, err)
		}
		dq, ok := q.(plugin.DiagnosisQuery)
		if !ok {
			continue // the drill-down's own request
		}
		seen++
		if dq.Instance != "$instance" || !dq.OneInstance {
			t.Errorf("%s, %s: instance %q, oneInstance %t; want $instance, true", tg.File, tg.Panel, dq.Instance, dq.OneInstance)
		}
	}
	if seen == 0 {
		t.Fatal("no findings annotation")
	}
}

// Every panel says what it shows and how to read it (the ⓘ beside its title).
func TestEveryPanelHasADescription(t *testing.T) {
	for _, file := range dashboardFiles(t) {
		for _, p := range sizedPanels(t, file) {
			if p.Type != "row" && p.Description == "" {
				t.Errorf("%s: %q has no description", file, p.Title)
			}
		}
	}
}
