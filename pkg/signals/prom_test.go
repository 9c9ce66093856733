package signals_test

import (
	"os"
	"path/filepath"
	"testing"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/testbed"
)

// backfilled starts a real Prometheus holding the OpenMetrics files and returns its API.
func backfilled(t *testing.T, files ...string) v1.API {
	t.Helper()
	api, err := promapi.NewClient(promapi.Config{Address: testbed.Prometheus(t, files...).URL})
	require.NoError(t, err)
	return v1.NewAPI(api)
}

// backfilledText is backfilled with one OpenMetrics text, its "# EOF" included.
func backfilledText(t *testing.T, openMetrics string) v1.API {
	t.Helper()
	file := filepath.Join(t.TempDir(), "data.om")
	require.NoError(t, os.WriteFile(file, []byte(openMetrics), 0o644))
	return backfilled(t, file)
}
