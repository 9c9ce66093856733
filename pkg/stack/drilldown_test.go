package stack

import (
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/series"
)

// templateRef finds $name and ${name...} references in a dashboard's JSON.
var templateRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// TestRequestLinkSetsEveryVariableOfTheDrillDown: a click on a request keeps its context
// only if the link sets each variable that the drill-down's panels and annotations read;
// otherwise that panel falls back to the variable's default (the whole fleet, another data
// source). A display preference (how many instances a graph draws) is no context: the link
// leaves it at its default.
func TestRequestLinkSetsEveryVariableOfTheDrillDown(t *testing.T) {
	var dd dashboard
	for _, d := range loadDashboards(t) {
		if d.UID == frames.DrillDownUID {
			dd = d
		}
	}
	if dd.file == "" {
		t.Fatalf("no provisioned dashboard has uid %s", frames.DrillDownUID)
	}
	raw, err := os.ReadFile(path("dashboards/" + dd.file))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Panels      json.RawMessage `json:"panels"`
		Annotations json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range templateRef.FindAllStringSubmatch(string(body.Panels)+string(body.Annotations), -1) {
		if _, ok := dd.variable(m[1]); ok {
			used[m[1]] = true
		}
	}
	for _, want := range []string{"datasource", "traces", "traceId", "instance", "model"} {
		if !used[want] {
			t.Errorf("the drill-down's panels do not read $%s", want)
		}
	}

	noInfo := func(series.Signal) frames.SignalInfo { return frames.SignalInfo{} }
	table := frames.Requests(nil, frames.TraceLinks{DatasourceUID: "jaeger-uid", VLLMUID: "vllm-2"}, noInfo, "", nil)
	id, _ := table.FieldByName("trace_id")
	var link string
	for _, l := range id.Config.Links {
		if strings.HasPrefix(l.URL, "/d/"+frames.DrillDownUID+"?") {
			link = l.URL
		}
	}
	if link == "" {
		t.Fatal("the trace id does not link to the drill-down")
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for name := range used {
		if q.Get("var-"+name) == "" && name != "topk" {
			t.Errorf("the drill-down's panels read $%s, which the request link (%s) does not set", name, link)
		}
	}
	if q.Get("var-datasource") != "vllm-2" || q.Get("var-traces") != "jaeger-uid" {
		t.Errorf("link %s: want var-datasource=vllm-2 (the answering data source) and var-traces=jaeger-uid", link)
	}
	if q.Get("from") == "" || q.Get("to") == "" {
		t.Errorf("link %s has no time range", link)
	}
}

// TestDrillDownOpensOnTheMostAnomalousRequest: opened without a trace id (from the dashboard
// list), the drill-down's trace id is the first option of a query variable over the plugin's
// anomalous requests, the most anomalous of the selected instances and models first (Grafana
// picks a single-value variable's first option when its value is not among them), so that no
// panel is left without a request. A clicked request's id comes in the URL, which Grafana keeps
// through the variable's first load; a typed one is a custom value. The options load with the
// dashboard, not on every time change, so that the 30-second auto refresh does not replace a
// clicked request that is not among them.
func TestDrillDownOpensOnTheMostAnomalousRequest(t *testing.T) {
	var dd dashboard
	for _, d := range loadDashboards(t) {
		if d.UID == frames.DrillDownUID {
			dd = d
		}
	}
	v, ok := dd.variable("traceId")
	if !ok {
		t.Fatal("the drill-down has no traceId variable")
	}
	var q struct {
		Kind     string `json:"kind"`
		Instance string `json:"instance"`
		Model    string `json:"model"`
	}
	if err := json.Unmarshal(v.Query, &q); err != nil {
		t.Fatalf("traceId's query %s: %v", v.Query, err)
	}
	want := struct{ Kind, Instance, Model string }{"anomalousRequests", "$instance", "$model"}
	if got := (struct{ Kind, Instance, Model string }{q.Kind, q.Instance, q.Model}); got != want {
		t.Errorf("traceId's query %+v, want %+v", got, want)
	}
	if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
		t.Errorf("traceId: want a query variable on ${datasource}, got type %q on %+v", v.Type, v.Datasource)
	}
	if v.Multi || v.IncludeAll || !v.AllowCustom || v.Refresh != 1 {
		t.Errorf("traceId: want one value, no All, custom values allowed, options loaded with the dashboard; got multi=%v includeAll=%v allowCustomValue=%v refresh=%d",
			v.Multi, v.IncludeAll, v.AllowCustom, v.Refresh)
	}
}
