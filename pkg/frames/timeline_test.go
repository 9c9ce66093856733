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

func TestTimelineShowsAHeadlineRowPerInstanceAndOnlyTheRulesThatHappened(t *testing.T) {
	res := diagnosed(t)
	frames := Timeline(res, false)
	got := rowsOf(t, frames)
	// The saturated instance's rule row follows its headline; the calm one has only a headline.
	want := []string{
		keySat.Instance + " · llama",
		keySat.Instance + " · llama · " + diagnosis.KVCacheSaturated,
		keyCalm.Instance + " · llama",
	}
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

func TestTimelineOfOneInstanceShowsEveryRule(t *testing.T) {
	res := fleetDiagnosed(t, 1)
	got := rowsOf(t, Timeline(res, false))
	if len(got) != 1+len(res.Rules) {
		t.Fatalf("rows %v, want the headline and one per rule", got)
	}
}

func TestTimelineWithEveryRuleKeepsEveryInstanceAndRule(t *testing.T) {
	const n = 40
	res := fleetDiagnosed(t, n)
	got := rowsOf(t, Timeline(res, true))
	if len(got) != n*(1+len(res.Rules)) {
		t.Fatalf("%d rows, want a headline and one row per rule for each of the %d instances", len(got), n)
	}
}

func TestTimelineOfALargeFleetDropsTheQuietInstancesWithANotice(t *testing.T) {
	for _, n := range []int{ReadableRows, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			res := fleetDiagnosed(t, n)
			frames := Timeline(res, false)
			got := rowsOf(t, frames)
			if len(got) != 2 || !strings.HasPrefix(got[0], "vllm-000:8000") {
				t.Fatalf("rows %v, want the saturated instance's headline and rule", got)
			}
			want := fmt.Sprintf("%d of %d instances were ok throughout", n-1, n)
			if len(frames[0].Meta.Notices) == 0 || !strings.HasPrefix(frames[0].Meta.Notices[0].Text, want) {
				t.Errorf("notices %+v, want one saying %q", frames[0].Meta.Notices, want)
			}
		})
	}
}

func TestTimelineOfASmallFleetKeepsItsQuietInstances(t *testing.T) {
	n := ReadableRows - 2 // with the saturated instance's rule row: ReadableRows rows
	got := rowsOf(t, Timeline(fleetDiagnosed(t, n), false))
	if len(got) != n+1 {
		t.Fatalf("%d rows, want %d", len(got), n+1)
	}
}

func TestTimelineOfNoInstanceIsOneFrameWithItsNotices(t *testing.T) {
	res, err := diagnosis.Evaluate(series.NewSet(series.Grid{Start: start, Step: time.Minute, Len: 5}), diagnosis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if frames := Timeline(res, false); len(frames) != 1 || frames[0].Meta == nil {
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
	frames := Timeline(res, true)
	head, _ := frames[0].FieldByName("headline")
	if got, want := head.At(1).(string), HeadlineValue(string(diagnosis.Info), diagnosis.PrefillBound); got != want {
		t.Errorf("headline at 10 min: %q, want %q", got, want)
	}
}
