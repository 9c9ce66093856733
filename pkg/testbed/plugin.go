package testbed

import (
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
)

// Plugin starts a data source plugin's gRPC server on a free 127.0.0.1 port (pickPort), as Grafana
// starts a backend plugin. Call it once per test binary: the SDK registers the server's
// metrics globally, so a second server would panic.
func Plugin(factory datasource.InstanceFactoryFunc) (datasourcetest.TestPlugin, error) {
	port, err := pickPort()
	if err != nil {
		return datasourcetest.TestPlugin{}, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return datasourcetest.Manage(factory, datasourcetest.ManageOpts{Address: addr})
}
