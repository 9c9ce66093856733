package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFleetHasItsFaultsOnTheOddInstances(t *testing.T) {
	sc, err := Lookup("fleet-14")
	require.NoError(t, err)
	require.NoError(t, sc.Validate())
	require.Len(t, sc.Instances, 14)
	faulty := FleetFaulty(14)
	require.Len(t, faulty, len(fleetFaults))
	for _, in := range sc.Instances {
		rule, isFaulty := faulty[in.Address]
		if !isFaulty {
			require.Empty(t, in.Faults, in.Address)
			continue
		}
		require.Len(t, in.Faults, 1, in.Address)
		require.Equal(t, rule, in.Faults[0].Rule, in.Address)
	}
}

func TestFleetSizes(t *testing.T) {
	for _, tc := range []struct {
		n      int
		first  string
		last   string
		faults int
	}{
		{n: 1, first: "vllm-00:8000", last: "vllm-00:8000", faults: 0},
		{n: 4, first: "vllm-00:8000", last: "vllm-03:8000", faults: 2},
		{n: 500, first: "vllm-000:8000", last: "vllm-499:8000", faults: 5},
	} {
		sc, err := Fleet(tc.n)
		require.NoError(t, err)
		require.NoError(t, sc.Validate())
		require.Equal(t, tc.first, sc.Instances[0].Address)
		require.Equal(t, tc.last, sc.Instances[tc.n-1].Address)
		require.Len(t, FleetFaulty(tc.n), tc.faults)
	}
}

func TestFleetRejectsBadSizes(t *testing.T) {
	for _, name := range []string{"fleet-0", "fleet-x", "fleet-"} {
		_, err := Lookup(name)
		require.Error(t, err, name)
	}
}

func TestFleetTruthNamesOnlyTheFaultyInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a fleet for two hours")
	}
	sc, err := Fleet(12)
	require.NoError(t, err)
	res, err := Run(sc, time.Unix(1_700_000_000, 0), 2*time.Hour, 15*time.Second, WithSpanSampling(20))
	require.NoError(t, err)
	faulty := FleetFaulty(12)
	found := map[string]bool{}
	for _, f := range res.Truth {
		require.Equal(t, faulty[f.Instance], f.Rule, "truth on %s", f.Instance)
		found[f.Instance] = true
	}
	require.Len(t, found, len(faulty), "every injected fault shows in the truth")
	require.NotEmpty(t, res.Spans)
}
