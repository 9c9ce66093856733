package sim

import (
	"strings"
	"testing"
)

// A scenario with a bad LoRA load, --max-loras or stall fault is refused, naming what is wrong
// and where.
func TestValidateRejectsBadLoRAAndStallSettings(t *testing.T) {
	cases := []struct {
		name   string
		change func(sc *Scenario)
		want   string
	}{
		{"a LoRA share without adapters", func(sc *Scenario) { sc.Instances[1].Load.LoRAFraction = 0.5 },
			"instance 1 (127.0.0.1:8001): load: loraFraction must be in [0, 1] with adapters at least 1"},
		{"a LoRA share above 1", func(sc *Scenario) { sc.Instances[1].Load.LoRAFraction, sc.Instances[1].Load.Adapters = 1.5, 2 },
			"loraFraction must be in [0, 1]"},
		{"negative --max-loras", func(sc *Scenario) { sc.Instances[0].Engine.MaxLoras = -1 },
			"instance 0 (127.0.0.1:8000): engine: maxLoras must not be negative, got -1"},
		{"a stall that is also a redeploy", func(sc *Scenario) { sc.Instances[1].Faults[0].Redeploy = true },
			"fault 0 (engine_stalled): a stall ends in a restart of its own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Lookup(RuleEngineStalled)
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Validate(); err != nil {
				t.Fatalf("the scenario as built: %v", err)
			}
			c.change(&sc)
			if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}
