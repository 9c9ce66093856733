package sim

import (
	"os"
	"sort"
	"testing"
	"time"
)

func TestTune(t *testing.T) {
	name := os.Getenv("TUNE")
	if name == "" {
		t.Skip()
	}
	sc, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	res, err := Run(sc, start, 30*time.Minute, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run took %v, %d spans", time.Since(t0), len(res.Spans))
	for _, f := range res.Truth {
		t.Logf("truth %s %s %s-%s", f.Rule, f.Instance, f.Start.Format("15:04:05"), f.End.Format("15:04:05"))
	}
	for _, in := range sc.Instances {
		v := res.view(in.Address)
		pts := v.points(time.Minute)
		b := v.baseline(start, start.Add(10*time.Minute))
		t.Logf("%s baseline p50 %v p99 %v itl99 %v prefill %.3f decode %.3f\n%s", in.Address, b.p50, b.p99, b.itl99, b.prefill, b.decode, table(pts))
		var rules []string
		for r := range conditions {
			rules = append(rules, r)
		}
		sort.Strings(rules)
		for _, r := range rules {
			for _, iv := range firing(r, pts, b, 15*time.Second) {
				t.Logf("  FIRES %s %s-%s", r, iv[0].Format("15:04:05"), iv[1].Format("15:04:05"))
			}
		}
	}
}
