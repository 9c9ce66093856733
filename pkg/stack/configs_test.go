package stack

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

// mountedConfig returns the repository file a service mounts at target.
func mountedConfig(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("service %s mounts nothing at %s", s.Name, target)
	return ""
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// prometheusConfig is the part of Prometheus's configuration the stack relies on; promtool
// checks the whole.
type prometheusConfig struct {
	Global        map[string]any `yaml:"global"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string          `yaml:"targets"`
			Labels  map[string]string `yaml:"labels"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func TestPrometheusConfigPassesPromtool(t *testing.T) {
	file := mountedConfig(t, service(t, loadProject(t), "prometheus"), "/etc/prometheus/prometheus.yml")
	out, err := exec.Command(testbed.PromtoolPath(t), "check", "config", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

func prometheusTargets(t *testing.T, p *types.Project) []string {
	t.Helper()
	var c prometheusConfig
	readYAMLStrict(t, mountedConfig(t, service(t, p, "prometheus"), "/etc/prometheus/prometheus.yml"), &c)
	var out []string
	for _, sc := range c.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			out = append(out, st.Targets...)
		}
	}
	return out
}

func TestPrometheusScrapesOnlyServicesOfTheStack(t *testing.T) {
	p := loadProject(t, "gpu")
	services := p.ServiceNames()
	for _, target := range prometheusTargets(t, p) {
		if h := hostOf(t, target); !slices.Contains(services, h) {
			t.Errorf("Prometheus scrapes %s, whose host is not a service of docker-compose.yaml", target)
		}
	}
}

// flag returns the value after name in a command line, or "".
func flag(cmd []string, name string) string {
	if i := slices.Index(cmd, name); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return ""
}

// Each simulated instance is scraped at the address its spans carry as service.instance.id,
// so that the plugin joins traces with metrics.
func TestPrometheusScrapesEverySimulatedInstanceAtItsSpanAddress(t *testing.T) {
	p := loadProject(t)
	targets := prometheusTargets(t, p)
	var sims int
	for _, s := range p.Services {
		if s.Build == nil || s.Build.Target != "vllm-sim" {
			continue
		}
		sims++
		name, listen := flag(s.Command, "--scenario"), flag(s.Command, "--listen")
		sc, err := sim.Lookup(name)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if h := hostOf(t, listen); h != s.Name {
			t.Errorf("%s listens on %q: the host must be the service's name, which Prometheus scrapes", s.Name, listen)
		}
		at, err := sim.Relisten(sc, listen)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		for _, in := range at.Instances {
			if !slices.Contains(targets, in.Address) {
				t.Errorf("%s: instance %s is not scraped", s.Name, in.Address)
			}
		}
		if flag(s.Command, "--otlp-endpoint") == "" {
			t.Errorf("%s sends no spans", s.Name)
		}
	}
	if sims == 0 {
		t.Fatal("no simulator runs by default")
	}
}

func TestPrometheusScrapesTheRealVLLMAtItsSpanAddress(t *testing.T) {
	p := loadProject(t, "gpu")
	s := service(t, p, "vllm")
	addr := s.Name + ":" + flag(s.Command, "--port")
	if !slices.Contains(prometheusTargets(t, p), addr) {
		t.Errorf("vllm serves on %s, which Prometheus does not scrape", addr)
	}
	attrs := s.Environment["OTEL_RESOURCE_ATTRIBUTES"]
	if attrs == nil || !slices.Contains(strings.Split(*attrs, ","), "service.instance.id="+addr) {
		t.Errorf("vllm's spans do not carry service.instance.id=%s, so they cannot join its metrics", addr)
	}
}

// collectorConfig is the part of the OTel Collector's configuration the stack relies on.
type collectorConfig struct {
	Receivers  map[string]map[string]any `yaml:"receivers"`
	Processors map[string]map[string]any `yaml:"processors"`
	Exporters  map[string]struct {
		Endpoint string `yaml:"endpoint"`
		TLS      struct {
			Insecure bool `yaml:"insecure"`
		} `yaml:"tls"`
	} `yaml:"exporters"`
	Extensions map[string]map[string]any `yaml:"extensions"`
	Service    struct {
		Extensions []string `yaml:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

func TestCollectorSendsEverySpanToJaegerAndTempo(t *testing.T) {
	p := loadProject(t)
	var c collectorConfig
	readYAMLStrict(t, mountedConfig(t, service(t, p, "otel-collector"), "/etc/otelcol-contrib/config.yaml"), &c)
	traces, ok := c.Service.Pipelines["traces"]
	if !ok {
		t.Fatal("no traces pipeline")
	}
	for _, r := range traces.Receivers {
		if _, ok := c.Receivers[r]; !ok {
			t.Errorf("pipeline receiver %s is not defined", r)
		}
	}
	for _, pr := range traces.Processors {
		if _, ok := c.Processors[pr]; !ok {
			t.Errorf("pipeline processor %s is not defined", pr)
		}
	}
	for _, e := range c.Service.Extensions {
		if _, ok := c.Extensions[e]; !ok {
			t.Errorf("extension %s is not defined", e)
		}
	}
	var sent []string
	for _, name := range traces.Exporters {
		e, ok := c.Exporters[name]
		if !ok {
			t.Errorf("pipeline exporter %s is not defined", name)
			continue
		}
		// otlp_grpc since collector v0.144; the bare otlp name is deprecated.
		if !strings.HasPrefix(name, "otlp_grpc/") {
			t.Errorf("exporter %s: want an otlp_grpc exporter", name)
		}
		if !e.TLS.Insecure {
			t.Errorf("exporter %s uses TLS, which Jaeger and Tempo do not serve in the stack", name)
		}
		sent = append(sent, hostOf(t, e.Endpoint))
	}
	for _, backend := range []string{"jaeger", "tempo"} {
		if !slices.Contains(sent, backend) {
			t.Errorf("spans do not reach %s (exporters send to %v)", backend, sent)
		}
	}
	otlp := c.Receivers["otlp"]
	for _, proto := range []string{"grpc", "http"} {
		endpoint, _ := otlp["protocols"].(map[string]any)[proto].(map[string]any)["endpoint"].(string)
		if !strings.HasPrefix(endpoint, "0.0.0.0:") {
			t.Errorf("OTLP %s listens on %q; the collector's default is localhost, unreachable from other containers", proto, endpoint)
		}
	}
}

// tempoConfig is the part of Tempo's configuration the stack relies on.
type tempoConfig struct {
	StreamOverHTTP bool `yaml:"stream_over_http_enabled"`
	Server         struct {
		HTTPListenPort int    `yaml:"http_listen_port"`
		LogLevel       string `yaml:"log_level"`
	} `yaml:"server"`
	Distributor struct {
		Receivers struct {
			OTLP struct {
				Protocols map[string]struct {
					Endpoint string `yaml:"endpoint"`
				} `yaml:"protocols"`
			} `yaml:"otlp"`
		} `yaml:"receivers"`
	} `yaml:"distributor"`
	Ingester  map[string]any `yaml:"ingester"`
	Compactor map[string]any `yaml:"compactor"`
	Storage   struct {
		Trace struct {
			Backend string `yaml:"backend"`
			WAL     struct {
				Path string `yaml:"path"`
			} `yaml:"wal"`
			Local struct {
				Path string `yaml:"path"`
			} `yaml:"local"`
		} `yaml:"trace"`
	} `yaml:"storage"`
	UsageReport struct {
		ReportingEnabled bool `yaml:"reporting_enabled"`
	} `yaml:"usage_report"`
}

func TestTempoReceivesOTLPAndStoresInItsVolume(t *testing.T) {
	p := loadProject(t)
	s := service(t, p, "tempo")
	var file string
	for _, a := range s.Command {
		if f, ok := strings.CutPrefix(a, "-config.file="); ok {
			file = f
		}
	}
	var c tempoConfig
	readYAMLStrict(t, mountedConfig(t, s, file), &c)
	for _, proto := range []string{"grpc", "http"} {
		if e := c.Distributor.Receivers.OTLP.Protocols[proto].Endpoint; !strings.HasPrefix(e, "0.0.0.0:") {
			t.Errorf("OTLP %s listens on %q; Tempo's default is localhost", proto, e)
		}
	}
	if c.Storage.Trace.Backend != "local" {
		t.Fatalf("storage backend %q", c.Storage.Trace.Backend)
	}
	var volume string
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume {
			volume = v.Target
		}
	}
	for _, dir := range []string{c.Storage.Trace.WAL.Path, c.Storage.Trace.Local.Path} {
		if volume == "" || !strings.HasPrefix(dir, volume+"/") {
			t.Errorf("Tempo writes %s outside its named volume (%q), where UID 10001 cannot write", dir, volume)
		}
	}
	var tempo provisionedSource
	for _, d := range byType(loadDatasources(t), "tempo") {
		tempo = d
	}
	if !strings.HasSuffix(tempo.URL, ":"+strconv.Itoa(c.Server.HTTPListenPort)) {
		t.Errorf("the Tempo data source reads %s but Tempo listens on %d", tempo.URL, c.Server.HTTPListenPort)
	}
}
