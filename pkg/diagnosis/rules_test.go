package diagnosis

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/series"
)

// incomplete lists what a rule's value lacks of what every rule needs. A rule is one value, so
// adding one cannot leave a table elsewhere behind: this is the whole list.
func incomplete(r Rule, all []Rule) []string {
	var out []string
	lack := func(what string) { out = append(out, what) }
	if r.ID == "" || r.Title == "" || r.Symptom == "" || r.condition == "" || r.Cause == "" {
		lack("id, title, symptom, condition and cause")
	}
	if !hasFlagOrStep(r.Action) {
		lack("an action that names the flag to change (or the instances to add, or the findings to look at)")
	}
	if len(r.Evidence) == 0 || len(r.Required) == 0 {
		lack("evidence and required signals")
	}
	if len(r.Params) == 0 || r.Params[len(r.Params)-1].Name != ForParam || r.Params[len(r.Params)-1].Default <= 0 {
		lack("a `for` parameter, last, above 0")
	}
	if r.eval == nil || r.summary == nil {
		lack("a condition (eval) and its summary")
	}
	if r.rank <= 0 {
		lack("a headline rank")
	}
	if p := r.Promise; p.Signal == "" || (p.Direction != series.Up && p.Direction != series.Down) || p.Sentence == "" {
		lack("a promise: the signal its action moves, up or down, and a sentence saying why")
	}
	if (r.recommend.compute == nil) == (r.recommend.none == "") {
		lack("a recommendation, or the reason it has none (and not both)")
	}
	known := map[string]bool{}
	for _, o := range all {
		known[o.ID] = true
	}
	for _, id := range append(slices.Clone(r.explains), r.explainedBy...) {
		if !known[id] || id == r.ID {
			lack(fmt.Sprintf("links to other rules of the matrix (%q is not one)", id))
		}
	}
	ex := explainers(all)
	linked := len(ex[r.ID]) > 0
	for _, cs := range ex {
		linked = linked || slices.Contains(cs, r.ID)
	}
	if linked == (r.standsAlone != "") {
		lack("a link to a rule it explains or that explains it, or the reason it stands alone (and not both)")
	}
	for st, rank := range r.lengthens {
		if st != StageQueue && st != StagePrefill && st != StageDecode || rank <= 0 {
			lack(fmt.Sprintf("stage ranks above 0 for queue, prefill or decode (not %s: %d)", st, rank))
		}
	}
	return out
}

// A rule missing any part of its value fails; TestAnIncompleteRuleFails shows that it can.
func TestEveryRuleIsComplete(t *testing.T) {
	for _, r := range matrix {
		if miss := incomplete(r, matrix); len(miss) > 0 {
			t.Errorf("%s lacks %s", r.ID, strings.Join(miss, "; "))
		}
	}
}

func TestAnIncompleteRuleFails(t *testing.T) {
	cases := []struct {
		name   string
		change func(r *Rule)
		want   string
	}{
		{"no headline rank (it would win every headline)", func(r *Rule) { r.rank = 0 }, "a headline rank"},
		{"no recommendation and no reason", func(r *Rule) { r.recommend = recommender{} }, "a recommendation"},
		{"a recommendation and a reason for none", func(r *Rule) { r.recommend.none = "no value" }, "a recommendation"},
		{"a link to an unknown rule", func(r *Rule) { r.explains = []string{"kv_cache_saturatd"} }, "links to other rules"},
		{"a stage that is not one", func(r *Rule) { r.lengthens = map[string]int{"other": 10} }, "stage ranks"},
		{"an action without a flag", func(r *Rule) { r.Action = "fix it" }, "an action"},
		{"no promise", func(r *Rule) { r.Promise = series.Promise{} }, "a promise"},
		{"a promise without a direction", func(r *Rule) { r.Promise.Direction = "" }, "a promise"},
		{"a promise without its sentence", func(r *Rule) { r.Promise.Sentence = "" }, "a promise"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kvCacheSaturated
			c.change(&r)
			miss := strings.Join(incomplete(r, withRule(r)), "; ")
			if !strings.Contains(miss, c.want) {
				t.Errorf("lacks %q, want it to lack %s", miss, c.want)
			}
		})
	}
	// A rule in no link must say why it stands alone.
	alone := clientTimeouts
	if miss := strings.Join(incomplete(alone, []Rule{alone}), "; "); !strings.Contains(miss, "stands alone") {
		t.Errorf("client_timeouts with no link and no reason lacks %q", miss)
	}
}

// withRule is the matrix with r in place of the rule of its id.
func withRule(r Rule) []Rule {
	all := slices.Clone(matrix)
	for i := range all {
		if all[i].ID == r.ID {
			all[i] = r
		}
	}
	return all
}

// Headline ranks are distinct, as are each stage's: no two rules tie for an instance's headline
// or a request's explanation.
func TestRanksAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, r := range matrix {
		keys := []string{fmt.Sprintf("headline %d", r.rank)}
		for st, n := range r.lengthens {
			keys = append(keys, fmt.Sprintf("%s %d", st, n))
		}
		for _, k := range keys {
			if other, dup := seen[k]; dup {
				t.Errorf("%s and %s share rank %s", other, r.ID, k)
			}
			seen[k] = r.ID
		}
	}
}

// HeadlineRank is each rule's own rank, and an id no rule has ranks after every rule, so that
// a caller sorting by it never puts an unknown rule first.
func TestHeadlineRank(t *testing.T) {
	unknown := HeadlineRank("no_such_rule")
	for _, r := range matrix {
		if got := HeadlineRank(r.ID); got != r.rank || got >= unknown {
			t.Errorf("HeadlineRank(%s) = %d, want its rank %d, before an unknown id's %d", r.ID, got, r.rank, unknown)
		}
	}
}

// Each link is declared once, and following links from a symptom to its cause ends: the
// findings' chains to their root cause (settle) rely on it.
func TestLinksAreDeclaredOnceAndFormNoCycle(t *testing.T) {
	declared := map[[2]string]int{}
	for _, r := range matrix {
		for _, s := range r.explains {
			declared[[2]string{r.ID, s}]++
		}
		for _, c := range r.explainedBy {
			declared[[2]string{c, r.ID}]++
		}
	}
	for link, n := range declared {
		if n > 1 {
			t.Errorf("%s explains %s is declared %d times", link[0], link[1], n)
		}
	}
	var visit func(id string, path []string)
	visit = func(id string, path []string) {
		if slices.Contains(path, id) {
			t.Fatalf("links form a cycle: %s", strings.Join(append(path, id), " explained by "))
		}
		for _, c := range causes[id] {
			visit(c, append(path, id))
		}
	}
	for _, r := range matrix {
		visit(r.ID, nil)
	}
}

// A link may be declared on either side: on the cause (explains) or on the symptom
// (explainedBy); both read the same.
func TestLinksReadFromEitherSide(t *testing.T) {
	rules := []Rule{
		{ID: "cause", explains: []string{"symptom"}},
		{ID: "other_cause"},
		{ID: "symptom", explainedBy: []string{"other_cause"}},
	}
	got := explainers(rules)["symptom"]
	slices.Sort(got)
	if want := []string{"cause", "other_cause"}; !reflect.DeepEqual(got, want) {
		t.Errorf("symptom explained by %v, want %v", got, want)
	}
}

// A stage's causes are listed by their rank for that stage, whatever the matrix's order.
func TestStageCausesFollowTheirRanks(t *testing.T) {
	rules := []Rule{
		{ID: "late", lengthens: map[string]int{StageQueue: 30, StageDecode: 10}},
		{ID: "early", lengthens: map[string]int{StageQueue: 10}},
		{ID: "between", lengthens: map[string]int{StageQueue: 15, StageDecode: 20}},
		{ID: "none"},
	}
	got := stageRanking(rules)
	want := map[string][]string{StageQueue: {"early", "between", "late"}, StageDecode: {"late", "between"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stage causes %v, want %v", got, want)
	}
}
