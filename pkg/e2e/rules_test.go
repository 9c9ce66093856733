package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/stack"
)

// Each rule of the diagnosis has its simulator scenario, named by the rule's id, that injects
// the rule's fault; and each of the simulator's rule scenarios is a rule of the diagnosis. The
// simulator does not import the diagnosis: this test joins them. (pkg/stack checks that each
// rule has its provisioned alert rule; pkg/diagnosis that each rule's value is complete.)
func TestEveryRuleHasItsScenario(t *testing.T) {
	assert.ElementsMatch(t, diagnosis.IDs(), sim.FaultRules(), "the diagnosis's rules and the simulator's rule scenarios")
	for _, id := range diagnosis.IDs() {
		sc, err := sim.Lookup(id)
		if !assert.NoError(t, err, "the scenario of %s", id) {
			continue
		}
		var injected []string
		for _, in := range sc.Instances {
			for _, f := range in.Faults {
				injected = append(injected, f.Rule)
			}
		}
		assert.Equal(t, []string{id}, injected, "the faults of scenario %s", id)
	}
}

// README's matrix table has a row for each rule, and for no other.
func TestEveryRuleHasItsRowInTheReadme(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(stack.RepoRoot(), "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "\n## The diagnosis matrix\n")
	require.True(t, ok, "README has no section The diagnosis matrix")
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
	}
	assert.ElementsMatch(t, diagnosis.IDs(), rows, "README's matrix table")
}
