module github.com/seed/vllm-datasource

go 1.26.8

require (
	github.com/grafana/grafana-plugin-sdk-go v0.299.0 // indirect
	github.com/magefile/mage v1.17.2 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/common v0.73.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.opentelemetry.io/proto/otlp v1.11.1 // indirect
)
