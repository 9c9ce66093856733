package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// root is the repository, where the stack's files live.
var root = RepoRoot()

func path(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }

// loadProject loads docker-compose.yaml as docker compose would, with these profiles active.
func loadProject(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	o, err := cli.NewProjectOptions([]string{path("docker-compose.yaml")},
		cli.WithOsEnv, cli.WithDotEnv, cli.WithProfiles(profiles))
	if err != nil {
		t.Fatalf("compose options: %v", err)
	}
	p, err := o.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yaml does not load with profiles %v: %v", profiles, err)
	}
	return p
}

// readYAMLStrict decodes a YAML file into v, failing on any key v does not declare.
func readYAMLStrict(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", filepath.Base(file), err)
	}
}

// readJSON decodes a JSON file into v.
func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", filepath.Base(file), err)
	}
}

// pluginID is the id plugin.json declares.
func pluginID(t *testing.T) string {
	t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	readJSON(t, path("plugin.json"), &p)
	return p.ID
}

// hostOf returns the host of a URL or of a host:port address.
func hostOf(t *testing.T, addr string) string {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Hostname()
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q is neither a URL nor host:port: %v", addr, err)
	}
	return host
}
