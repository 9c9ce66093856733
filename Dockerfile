# Builds the vLLM Diagnosis plugin and the vLLM telemetry simulator for the demo stack
# (docker-compose.yaml). Targets: grafana (Grafana with the plugin installed) and vllm-sim.
# Base images are pinned by version; the final Grafana image is the one the stack documents.

# Backend: the Go binary Grafana starts. Grafana picks gpx_vllm_<os>_<arch> for its own
# platform, so the name follows the platform being built (amd64 or arm64).
FROM golang:1.26.8 AS backend
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY pkg ./pkg
RUN CGO_ENABLED=0 GOOS=linux GOARCH="${TARGETARCH:-amd64}" \
    go build -trimpath -ldflags "-s -w" -o "/out/gpx_vllm_linux_${TARGETARCH:-amd64}" ./pkg \
 && CGO_ENABLED=0 GOOS=linux GOARCH="${TARGETARCH:-amd64}" \
    go build -trimpath -ldflags "-s -w" -o /out-sim/vllm-sim ./pkg/cmd/vllm-sim

# Front end: module.js, plugin.json (version stamped), the logo and the README, into dist/.
FROM node:20.20.2-slim AS frontend
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY plugin.json tsconfig.json webpack.config.mjs README*.md ./
COPY src ./src
RUN npm run build

# The simulator serves each simulated instance's /metrics and sends OTLP spans; static binary.
FROM scratch AS vllm-sim
COPY --from=backend /out-sim/vllm-sim /vllm-sim
ENTRYPOINT ["/vllm-sim"]

# Grafana with the plugin in its plugin directory; provisioning is mounted by compose.
FROM grafana/grafana:12.4.6 AS grafana
COPY --from=frontend /src/dist/ /var/lib/grafana/plugins/seed-vllm-datasource/
COPY --from=backend /out/ /var/lib/grafana/plugins/seed-vllm-datasource/
