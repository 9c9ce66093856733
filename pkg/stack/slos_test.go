package stack

import (
	"slices"
	"testing"

	"github.com/seed/vllm-datasource/pkg/slo"
)

func TestProvisionedSLOs(t *testing.T) {
	cases := []struct {
		uid      string
		wantErr  bool
		wantSLOs []string
	}{
		{uid: "vllm", wantSLOs: []string{"ttft-1s", "availability"}},
		{uid: "vllm-tempo", wantSLOs: []string{"ttft-1s", "availability"}},
		{uid: "no-such-source", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.uid, func(t *testing.T) {
			raw, err := ProvisionedSLOs(c.uid)
			if c.wantErr {
				if err == nil {
					t.Fatalf("no error for uid %q", c.uid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objectives, err := slo.Parse(raw)
			if err != nil {
				t.Fatalf("the provisioned objectives do not parse: %v", err)
			}
			var names []string
			for _, o := range objectives {
				names = append(names, o.Name)
			}
			if !slices.Equal(names, c.wantSLOs) {
				t.Errorf("objectives %v, want %v", names, c.wantSLOs)
			}
		})
	}
}
