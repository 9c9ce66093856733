package diagnosis

import (
	"slices"
	"testing"
)

func TestSelectionValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  Selection
		err  string
	}{
		{name: "zero value", sel: Selection{}},
		{name: "every severity", sel: Selection{Severities: []string{"critical", "warning", "info"}}},
		{name: "unknown severity", sel: Selection{Severities: []string{"warning", "fatal"}},
			err: `severity "fatal" is not one of critical, warning, info`},
		{name: "severities are case-sensitive", sel: Selection{Severities: []string{"Critical"}},
			err: `severity "Critical" is not one of critical, warning, info`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sel.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("Validate() = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestSelectionKeep(t *testing.T) {
	findings := []Finding{
		{Rule: "kv_pressure", Severity: Critical, Headline: true},
		{Rule: "queue_saturation", Severity: Warning},
		{Rule: "prefix_cache_cold", Severity: Info, Headline: true},
		{Rule: "preemption", Severity: Critical},
	}
	for _, tc := range []struct {
		name string
		sel  Selection
		want []string
	}{
		{name: "zero value keeps all", sel: Selection{},
			want: []string{"kv_pressure", "queue_saturation", "prefix_cache_cold", "preemption"}},
		{name: "headline only", sel: Selection{HeadlineOnly: true},
			want: []string{"kv_pressure", "prefix_cache_cold"}},
		{name: "one severity", sel: Selection{Severities: []string{"critical"}},
			want: []string{"kv_pressure", "preemption"}},
		{name: "several severities", sel: Selection{Severities: []string{"info", "warning"}},
			want: []string{"queue_saturation", "prefix_cache_cold"}},
		{name: "headline and severity", sel: Selection{HeadlineOnly: true, Severities: []string{"critical"}},
			want: []string{"kv_pressure"}},
		{name: "nothing kept", sel: Selection{HeadlineOnly: true, Severities: []string{"warning"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range tc.sel.Keep(findings) {
				got = append(got, f.Rule)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Keep() rules = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelectionKeepCopies(t *testing.T) {
	findings := []Finding{{Rule: "a", Severity: Warning}, {Rule: "b", Severity: Critical}}
	kept := Selection{Severities: []string{"critical"}}.Keep(findings)
	kept[0].Rule = "changed"
	if findings[0].Rule != "a" || findings[1].Rule != "b" {
		t.Fatalf("Keep changed the findings given: %+v", findings)
	}
}
