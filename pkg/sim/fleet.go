package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// FleetPrefix names the fleet scenarios: "fleet-14" is Fleet(14).
const FleetPrefix = "fleet-"

// fleetFaults are the faults a fleet carries, one instance each, on the instances at odd
// positions (1, 3, 5, ...): the faults of the fleet the project's screenshots show.
var fleetFaults = []string{
	RuleKVCacheSaturated, RuleSpecDecodeInefficient, RulePrefixCacheMiss, RuleQueueWithFreeCache, RulePrefillBlocking,
}

// Fleet is n instances (vllm-00:8000, vllm-01:8000, ...) serving two models: the instances at
// positions 1, 3, 5, 7 and 9 are each set up and faulted as the faulty instance of the
// catalogue scenario of one rule of fleetFaults; the others are healthy, serving Llama and
// Qwen in turn. Each instance's ground truth comes from its own engine, as in every scenario.
func Fleet(n int) (Scenario, error) {
	if n < 1 {
		return Scenario{}, fmt.Errorf("a fleet needs at least one instance, got %d", n)
	}
	sc := Scenario{Name: FleetPrefix + strconv.Itoa(n), Seed: 42,
		Description: fmt.Sprintf("%d instances, two models; faults (%s) on the instances at odd positions from 1, one each; the rest healthy",
			n, strings.Join(fleetFaults, ", "))}
	for i := range n {
		addr := FleetAddress(n, i)
		if k := (i - 1) / 2; i%2 == 1 && k < len(fleetFaults) {
			in := faults[fleetFaults[k]].build().Instances[1]
			in.Address = addr
			sc.Instances = append(sc.Instances, in)
			continue
		}
		model := ModelLlama
		if i%4 == 2 {
			model = ModelQwen
		}
		sc.Instances = append(sc.Instances, Instance{Address: addr, Model: model, Engine: baseEngine(), Load: baseLoad()})
	}
	return sc, nil
}

// FleetAddress is the address of the fleet's instance at position i, for a fleet of n.
func FleetAddress(n, i int) string {
	return fmt.Sprintf("vllm-%0*d:8000", max(len(strconv.Itoa(n-1)), 2), i)
}

// FleetFaulty maps each faulty instance of a fleet of n to the rule of its fault.
func FleetFaulty(n int) map[string]string {
	out := map[string]string{}
	for k, rule := range fleetFaults {
		if i := 2*k + 1; i < n {
			out[FleetAddress(n, i)] = rule
		}
	}
	return out
}
