package testbed

import (
	"net"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/datasourcetest"
)

// Plugin starts a data source plugin's gRPC server on a free 127.0.0.1 port, as Grafana
// starts a backend plugin. Call it once per test binary: the SDK registers the server's
// metrics globally, so a second server would panic.
func Plugin(factory datasource.InstanceFactoryFunc) (datasourcetest.TestPlugin, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return datasourcetest.TestPlugin{}, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	return datasourcetest.Manage(factory, datasourcetest.ManageOpts{Address: addr})
}
