//go:build mage

package main

import (
	"github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/mg"
)

// The SDK reads src/plugin.json by default; this plugin keeps it at the top level, where
// Grafana's loader and the front-end build read it too.
func init() {
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	})
}

// BuildAll builds the backend for Linux, macOS and Windows on amd64 and arm64 into dist/.
func BuildAll() {
	b := build.Build{}
	mg.Deps(b.Linux, b.LinuxARM64, b.Darwin, b.DarwinARM64, b.Windows, mg.F(b.Custom, "windows", "arm64"))
}

// Default is what a plain `mage` runs.
var Default = BuildAll
