// Command gpx_vllm is the backend of the vLLM Diagnosis data source; Grafana starts it.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

func main() {
	if err := datasource.Manage("seed-vllm-datasource", plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
