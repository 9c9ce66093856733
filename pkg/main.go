// Command gpx_vllm is the backend of the vLLM Diagnosis data source; Grafana starts it.
package main

import (
	"os"
	"runtime/debug"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// bufferPoolExponents are the capacities (powers of two) of the buffers gRPC marshals the
// plugin's answers into. gRPC's default pool has none between 32 KiB and 1 MiB, so each answer
// in that range (a findings table, a fleet's timeline) took a whole MiB: 50 viewers of a
// dashboard held 100 MiB of buffers for answers of 44–380 KiB. With every power of two, a
// buffer is less than twice its answer.
var bufferPoolExponents = []uint8{8, 12, 14, 15, 16, 17, 18, 19, 20}

func init() {
	pool, err := mem.NewBinaryTieredBufferPool(bufferPoolExponents...)
	if err != nil {
		panic(err)
	}
	// In init, as gRPC asks, since setting it is not safe once servers run; the proto codec that
	// marshals the answers has no other way to be given a pool.
	experimental.SetDefaultBufferPool(pool)
}

// gcPercent is the collector's target when GOGC is not set, as Prometheus sets its own: the
// heap may grow to 1.75 rather than 2 times what is live before a collection. The refreshes of
// a dashboard peak together, so the peak is where the memory goes; the collector runs a little
// more often for it.
const gcPercent = 75

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if err := datasource.Manage("seed-vllm-datasource", plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
