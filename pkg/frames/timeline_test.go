package frames

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// fleetDiagnosed is 15 minutes of n instances, the first of them with a saturated KV cache,
// the others calm; rules kv_cache_saturated and spec_decode_inefficient (not applicable).
func fleetDiagnosed(t *testing.T, n int) diagnosis.Result {
	t.Helper()
	keys := make([]series.Key, n)
	for i := range keys {
		keys[i] = series.Key{Instance: fmt.Sprintf("vllm-%03d:8000", i), Model: "llama"}
	}
	return kvDiagnosed(t, keys[0], keys[1:], nil)
}

// rowsOf lists a timeline's rows (every field but time) by display name, and checks that each
// row's every value has a value mapping.
func rowsOf(t *testing.T, frames data.Frames) []string {
	t.Helper()
	var rows []string
	for _, f := range frames {
		if len(f.Fields) == 0 {
			continue
		}
		if f.Fields[0].Name != "time" {
			t.Fatalf("frame %s starts with %s", f.Name, f.Fields[0].Name)
		}
		for _, field := range f.Fields[1:] {
			rows = append(rows, field.Config.DisplayNameFromDS)
			mapped := field.Config.Mappings[0].(data.ValueMapper)
			for i := 0; i < field.Len(); i++ {
				if _, ok := mapped[field.At(i).(string)]; !ok {
					t.Fatalf("row %s: value %q has no mapping", field.Config.DisplayNameFromDS, field.At(i))
				}
			}
		}
	}
	return rows
}

func TestTimelineShowsOneRowPerInstanceLabelledWithTheInstance(t *testing.T) {
	res := diagnosed(t)
	frames := Timeline(res, HeadlineRows)
	got := rowsOf(t, frames)
	want := []string{keySat.Instance, keyCalm.Instance}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	head := frames[0].Fields[1]
	if head.Name != "headline" || head.Labels["instance"] != keySat.Instance {
		t.Fatalf("first row %s %v", head.Name, head.Labels)
	}
	if got := head.At(0); got != HeadlineValue("pending", diagnosis.KVCacheSaturated) {
		t.Errorf("saturated instance starts %v, want pending (the rule's `for` has not passed)", got)
	}
	last := head.At(head.Len() - 1).(string)
	if last != HeadlineValue(string(diagnosis.Critical), diagnosis.KVCacheSaturated) {
		t.Errorf("saturated instance ends %v", last)
	}
	if m := head.Config.Mappings[0].(data.ValueMapper)[last]; m.Text != diagnosis.KVCacheSaturated || m.Color != "red" {
		t.Errorf("headline %q maps to %+v, want the rule's name in red", last, m)
	}
	if calm := frames[1].Fields[1]; calm.At(0) != diagnosis.OK.String() {
		t.Errorf("calm instance is %v", calm.At(0))
	}
	if frames[0].Meta == nil || len(frames[0].Meta.Notices) == 0 {
		t.Error("the not-applicable notice of spec_decode_inefficient is missing")
	}
}

func TestTimelineWithEventfulRulesAddsTheRulesThatHappened(t *testing.T) {
	got := rowsOf(t, Timeline(diagnosed(t), EventfulRules))
	// The saturated instance's rule row follows its headline; the calm one has only a headline.
	want := []string{
		keySat.Instance,
		keySat.Instance + " · llama · " + diagnosis.KVCacheSaturated,
		keyCalm.Instance,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTimelineLabelsAnInstanceOfSeveralModelsWithTheModel(t *testing.T) {
	a := series.Key{Instance: "vllm-a:8000", Model: "llama"}
	b := series.Key{Instance: "vllm-a:8000", Model: "qwen"}
	c := series.Key{Instance: "vllm-b:8000", Model: "llama"}
	got := rowsOf(t, Timeline(kvDiagnosed(t, a, []series.Key{b, c}, nil), HeadlineRows))
	if want := []string{"vllm-a:8000 · llama", "vllm-a:8000 · qwen", "vllm-b:8000"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

func TestTimelineOfOneInstanceShowsEveryRule(t *testing.T) {
	res := fleetDiagnosed(t, 1)
	got := rowsOf(t, Timeline(res, HeadlineRows))
	if len(got) != 1+len(res.Rules) {
		t.Fatalf("rows %v, want the headline and one per rule", got)
	}
}

func TestTimelineWithEveryRuleKeepsEveryInstanceAndRule(t *testing.T) {
	const n = 40
	res := fleetDiagnosed(t, n)
	got := rowsOf(t, Timeline(res, EveryRule))
	if len(got) != n*(1+len(res.Rules)) {
		t.Fatalf("%d rows, want a headline and one row per rule for each of the %d instances", len(got), n)
	}
}

func TestTimelineOfALargeFleetDrawsAtMostTheReadableRowsWorstFirstWithANotice(t *testing.T) {
	for _, c := range []struct {
		n    int
		rows TimelineRows
	}{{ReadableRows + 1, HeadlineRows}, {500, HeadlineRows}, {500, EventfulRules}} {
		t.Run(fmt.Sprint(c.n, c.rows), func(t *testing.T) {
			frames := Timeline(fleetDiagnosed(t, c.n), c.rows)
			got := rowsOf(t, frames)
			if len(got) > ReadableRows || got[0] != "vllm-000:8000" {
				t.Fatalf("%d rows starting %v, want at most %d, the saturated instance first", len(got), got[0], ReadableRows)
			}
			drawn := len(frames)
			want := fmt.Sprintf("%d of %d instances are not drawn (%d ok throughout, 0 with", c.n-drawn, c.n, c.n-drawn)
			if len(frames[0].Meta.Notices) == 0 || !strings.HasPrefix(frames[0].Meta.Notices[0].Text, want) {
				t.Errorf("notices %+v, want one saying %q", frames[0].Meta.Notices, want)
			}
		})
	}
}

func TestTimelineOfAFleetThatFitsDrawsEveryInstance(t *testing.T) {
	got := rowsOf(t, Timeline(fleetDiagnosed(t, ReadableRows), HeadlineRows))
	if len(got) != ReadableRows {
		t.Fatalf("%d rows, want %d", len(got), ReadableRows)
	}
}

func TestTimelineOfNoInstanceIsOneFrameWithItsNotices(t *testing.T) {
	res, err := diagnosis.Evaluate(series.NewSet(series.Grid{Start: start, Step: time.Minute, Len: 5}), diagnosis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if frames := Timeline(res, HeadlineRows); len(frames) != 1 || frames[0].Meta == nil {
		t.Fatalf("frames %v", frames)
	}
}

// At a panel step coarser than the evaluation's, a point stands for the steps before it: a
// secondary finding that ended inside them keeps its severity (info) in the headline.
func TestHeadlineSeverityAtACoarsePanelStep(t *testing.T) {
	k := series.Key{Instance: "vllm-000:8000", Model: "llama"}
	grid := series.Grid{Start: start, Step: 10 * time.Minute, Len: 3}
	res := diagnosis.Result{
		Grid: grid,
		Timelines: []diagnosis.Timeline{{Key: k, Rules: []diagnosis.RuleStates{
			{Rule: diagnosis.PrefillBound, States: []diagnosis.State{diagnosis.OK, diagnosis.Firing, diagnosis.OK}},
		}}},
		Findings: []diagnosis.Finding{{Rule: diagnosis.PrefillBound, Key: k, Severity: diagnosis.Info,
			Start: start.Add(3 * time.Minute), End: start.Add(8 * time.Minute)}},
	}
	frames := Timeline(res, EveryRule)
	head, _ := frames[0].FieldByName("headline")
	if got, want := head.At(1).(string), HeadlineValue(string(diagnosis.Info), diagnosis.PrefillBound); got != want {
		t.Errorf("headline at 10 min: %q, want %q", got, want)
	}
}

// A fleet where every instance has a finding: past ReadableRows rows, the least severe are
// left out (critical before warning), and the notice counts them apart from the quiet ones.
func TestTimelineOfAFleetOfFindingsKeepsTheMostSevere(t *testing.T) {
	grid := series.Grid{Start: start, Step: time.Minute, Len: 2}
	res := diagnosis.Result{Grid: grid}
	n := ReadableRows + 5
	for i := range n {
		k := series.Key{Instance: fmt.Sprintf("vllm-%02d:8000", i), Model: "llama"}
		sev := diagnosis.Warning
		if i%2 == 1 {
			sev = diagnosis.Critical
		}
		res.Timelines = append(res.Timelines, diagnosis.Timeline{Key: k, Rules: []diagnosis.RuleStates{
			{Rule: diagnosis.KVCacheSaturated, States: []diagnosis.State{diagnosis.Firing, diagnosis.Firing}}}})
		res.Findings = append(res.Findings, diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: k, Severity: sev,
			Start: start, End: start.Add(2 * time.Minute)})
	}
	frames := Timeline(res, HeadlineRows)
	if len(frames) != ReadableRows {
		t.Fatalf("%d rows, want %d", len(frames), ReadableRows)
	}
	criticals := 0
	for _, f := range frames {
		if f.Fields[1].At(0) == HeadlineValue(string(diagnosis.Critical), diagnosis.KVCacheSaturated) {
			criticals++
		}
	}
	if criticals != n/2 {
		t.Errorf("%d critical rows drawn, want every one of the %d", criticals, n/2)
	}
	if want := fmt.Sprintf("5 of %d instances are not drawn (0 ok throughout, 5 with less severe findings", n); !strings.HasPrefix(frames[0].Meta.Notices[0].Text, want) {
		t.Errorf("notice %q, want %q", frames[0].Meta.Notices[0].Text, want)
	}
}
