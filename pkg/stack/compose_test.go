package stack

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// profileCases are the ways a user starts the stack: `docker compose up`, and with the gpu profile.
var profileCases = []struct {
	name     string
	profiles []string
}{
	{"default", nil},
	{"gpu", []string{"gpu"}},
}

func TestComposeLoadsWithEachProfile(t *testing.T) {
	for _, tc := range profileCases {
		t.Run(tc.name, func(t *testing.T) {
			p := loadProject(t, tc.profiles...)
			if len(p.Services) == 0 {
				t.Fatal("no services")
			}
		})
	}
}

func TestGPUProfileAddsTheRealVLLMAndItsLoad(t *testing.T) {
	base := loadProject(t).ServiceNames()
	gpu := loadProject(t, "gpu").ServiceNames()
	for _, name := range []string{"vllm", "vllm-bench"} {
		if slices.Contains(base, name) {
			t.Errorf("%s runs without the gpu profile; it needs an NVIDIA GPU", name)
		}
		if !slices.Contains(gpu, name) {
			t.Errorf("%s is missing from the gpu profile", name)
		}
	}
	s, err := loadProject(t, "gpu").GetService("vllm")
	if err != nil {
		t.Fatal(err)
	}
	if s.Deploy == nil || s.Deploy.Resources.Reservations == nil || len(s.Deploy.Resources.Reservations.Devices) == 0 {
		t.Fatal("vllm reserves no GPU device")
	}
}

// imageTag returns an image reference's tag, or "" when it has none; a digest counts as a tag.
func imageTag(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[i+1:]
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.Index(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return ""
}

func pinned(ref string) bool {
	tag := imageTag(ref)
	return tag != "" && tag != "latest"
}

func TestImagesArePinned(t *testing.T) {
	for _, tc := range profileCases {
		for _, s := range loadProject(t, tc.profiles...).Services {
			if s.Build != nil {
				continue // built here: its base images are checked in the Dockerfile
			}
			if !pinned(s.Image) {
				t.Errorf("%s: service %s uses image %q; pin a version tag", tc.name, s.Name, s.Image)
			}
		}
	}
}

// stage is one FROM of a Dockerfile.
type stage struct {
	image, name string
}

var fromLine = regexp.MustCompile(`(?i)^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$`)

func dockerfileStages(t *testing.T, file string) []stage {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []stage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := fromLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			out = append(out, stage{image: m[1], name: m[2]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuiltServicesUseStagesOfAPinnedDockerfile(t *testing.T) {
	for _, s := range loadProject(t, "gpu").Services {
		if s.Build == nil {
			continue
		}
		file := s.Build.Dockerfile
		if !strings.HasPrefix(file, "/") {
			file = s.Build.Context + "/" + file
		}
		stages := dockerfileStages(t, file)
		names := map[string]bool{}
		for _, st := range stages {
			if st.name != "" {
				names[st.name] = true
			}
		}
		for _, st := range stages {
			if st.image != "scratch" && !names[st.image] && !pinned(st.image) {
				t.Errorf("%s: FROM %s is not pinned to a version", file, st.image)
			}
		}
		if s.Build.Target != "" && !names[s.Build.Target] {
			t.Errorf("service %s builds target %q, which %s does not define", s.Name, s.Build.Target, file)
		}
	}
}

func TestBindMountSourcesExistInTheRepository(t *testing.T) {
	for _, tc := range profileCases {
		for _, s := range loadProject(t, tc.profiles...).Services {
			for _, v := range s.Volumes {
				if v.Type != types.VolumeTypeBind {
					continue
				}
				if !strings.HasPrefix(v.Source, root) {
					t.Errorf("service %s mounts %s from outside the repository", s.Name, v.Source)
				}
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("service %s mounts %s, which does not exist: %v", s.Name, v.Source, err)
				}
			}
		}
	}
}

func TestPublishedPortsListenOnLoopbackOnly(t *testing.T) {
	for _, tc := range profileCases {
		for _, s := range loadProject(t, tc.profiles...).Services {
			for _, p := range s.Ports {
				if p.Published != "" && p.HostIP != "127.0.0.1" {
					t.Errorf("%s: service %s publishes port %s on %q; bind it to 127.0.0.1", tc.name, s.Name, p.Published, p.HostIP)
				}
			}
		}
	}
}

// mountTarget returns where a service mounts a repository path, or "".
func mountTarget(s types.ServiceConfig, repoPath string) string {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Source == path(repoPath) {
			return v.Target
		}
	}
	return ""
}

func TestGrafanaLoadsTheUnsignedPluginAndTheProvisioning(t *testing.T) {
	id := pluginID(t)
	g, err := loadProject(t).GetService("grafana")
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Environment["GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS"]; v == nil || !slices.Contains(strings.Split(*v, ","), id) {
		t.Errorf("GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS does not list %s", id)
	}
	if got := mountTarget(g, "provisioning"); got != "/etc/grafana/provisioning" {
		t.Errorf("provisioning/ is mounted at %q, not /etc/grafana/provisioning", got)
	}
	var provider dashboardProviders
	readYAMLStrict(t, path("provisioning", "dashboards", "vllm.yaml"), &provider)
	if len(provider.Providers) != 1 {
		t.Fatalf("want one dashboard provider, got %d", len(provider.Providers))
	}
	if got, want := mountTarget(g, "dashboards"), provider.Providers[0].Options.Path; got != want {
		t.Errorf("dashboards/ is mounted at %q but the provider reads %q", got, want)
	}
	home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if home != nil && !strings.HasPrefix(*home, provider.Providers[0].Options.Path+"/") {
		t.Errorf("the home dashboard %s is not in the mounted dashboards folder", *home)
	}
}

func TestGrafanaImageInstallsTheBuiltPlugin(t *testing.T) {
	id := pluginID(t)
	g, err := loadProject(t).GetService("grafana")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(g.Build.Context + "/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	want := "/var/lib/grafana/plugins/" + id + "/"
	var copies int
	inTarget := false
	for _, line := range strings.Split(string(raw), "\n") {
		if m := fromLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			inTarget = m[2] == g.Build.Target
		}
		if inTarget && strings.HasPrefix(line, "COPY ") && strings.HasSuffix(strings.TrimSpace(line), want) {
			copies++
		}
	}
	if copies != 2 {
		t.Errorf("stage %s copies %d builds into %s; want the front end and the backend", g.Build.Target, copies, want)
	}
}

var (
	goBuild  = regexp.MustCompile(`go build\b[^\n]*?\s(\./\S+)`)
	copyLine = regexp.MustCompile(`(?m)^COPY\s+(.+)$`)
	mainPkg  = regexp.MustCompile(`(?m)^package main$`)
)

func TestDockerfileBuildsAndCopiesWhatTheRepositoryHas(t *testing.T) {
	raw, err := os.ReadFile(path("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	builds := goBuild.FindAllStringSubmatch(text, -1)
	if len(builds) == 0 {
		t.Fatal("the Dockerfile builds no Go package")
	}
	for _, m := range builds {
		files, _ := filepath.Glob(path(m[1], "*.go"))
		var main bool
		for _, f := range files {
			src, err := os.ReadFile(f)
			main = main || (err == nil && mainPkg.Match(src))
		}
		if !main {
			t.Errorf("go build %s: no main package there", m[1])
		}
	}
	for _, m := range copyLine.FindAllStringSubmatch(text, -1) {
		args := strings.Fields(m[1])
		if strings.HasPrefix(args[0], "--from=") {
			continue
		}
		var matched bool
		for _, src := range args[:len(args)-1] {
			files, _ := filepath.Glob(path(src))
			if len(files) == 0 && !strings.ContainsAny(src, "*?[") {
				t.Errorf("COPY %s: not in the repository", src)
			}
			matched = matched || len(files) > 0
		}
		if !matched {
			t.Errorf("COPY %s copies nothing", m[1])
		}
	}
}
