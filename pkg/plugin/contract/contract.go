// Package contract writes pkg/plugin's contract, its query models and its data source
// settings, as the JSON schema Grafana's plugin SDK defines for them (query.types.json and
// settings.json, as Grafana's own data sources publish theirs) and as the front end's
// TypeScript types, and checks stored queries and settings against that schema.
//
// The source is pkg/plugin's Go declarations, read with the SDK's schemabuilder: each query
// type's model (plugin.QueryModels) with its fields' doc comments, the enumerations
// (plugin.Enumerations, each from the one list the plugin's code reads), and the jsonData type
// with its defaults (plugin.SettingsContract). `go generate ./pkg/plugin` runs
// pkg/cmd/contract-files, which writes Files; TestFilesAreCurrent only reads them and fails
// while one is stale. A new field or query type is a change to pkg/plugin plus go generate.
//
// The package is kept apart from pkg/plugin so that the plugin's binary does not link the
// schema builder.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"

	sdkapi "github.com/grafana/grafana-plugin-sdk-go/experimental/apis/datasource/v0alpha1"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/pluginschema"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/schemabuilder"
	"github.com/invopop/jsonschema"
	orderedmap "github.com/wk8/go-ordered-map/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// PluginID is the data source's type, as stored queries name it.
const PluginID = "seed-vllm-datasource"

// APIVersion is the version of the schema files, as the SDK's schema provider reads them.
const APIVersion = "v0alpha1"

// The generated files, by their path from the repository's root.
const (
	QueryTypesFile = "src/schema/" + APIVersion + "/query.types.json"
	SettingsFile   = "src/schema/" + APIVersion + "/settings.json"
	TypeScriptFile = "src/types.gen.ts"
)

// TextQueryName is the name of the query definition of the text form (plugin.TextQuery), the
// one without a queryType.
const TextQueryName = "text"

// module is the Go module's path.
const module = "github.com/seed/vllm-datasource"

// Regenerate is the command that writes the files, for messages that say they are stale.
const Regenerate = "go generate ./pkg/plugin (or, from the repository's root, go run ./pkg/cmd/contract-files)"

// Root is the repository's root directory, found from this source file's location: the doc
// comments the schema carries are read from pkg/plugin's source.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("contract: cannot locate the repository from the caller's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Files returns the generated files' contents by their path from the repository's root.
func Files() (map[string][]byte, error) {
	b, err := newBuilder()
	if err != nil {
		return nil, err
	}
	models, err := b.queryModels()
	if err != nil {
		return nil, err
	}
	jsonData, err := b.jsonData()
	if err != nil {
		return nil, err
	}
	queryTypes, err := queryTypesFile(models)
	if err != nil {
		return nil, err
	}
	settings, err := settingsFile(jsonData)
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	for _, e := range b.enums {
		docs[e.Type.Name()] = b.typeDoc(e.Type)
	}
	return map[string][]byte{
		QueryTypesFile: queryTypes,
		SettingsFile:   settings,
		TypeScriptFile: typeScript(models, jsonData, b.enums, docs),
	}, nil
}

// model is one query definition: its name, its discriminating queryType (empty for the text
// form), its schema, and the values the plugin reads for the fields a query leaves empty, by
// their JSON names.
type model struct {
	name      string
	queryType plugin.QueryType
	schema    *jsonschema.Schema
	defaults  *orderedmap.OrderedMap[string, any]
}

type builder struct {
	r     *jsonschema.Reflector
	enums []plugin.Enumeration
}

// newBuilder sets up the SDK's schema builder on pkg/plugin's source, its enumerations mapped
// to string enums (titled with their Go type's name, each value's meaning in
// x-enum-description, the SDK's convention) and the settings whose JSON is not their Go type.
func newBuilder() (*builder, error) {
	scan, err := codePaths("pkg/plugin", "pkg/diagnosis", "pkg/verdict", "pkg/slo")
	if err != nil {
		return nil, err
	}
	sb, err := schemabuilder.NewSchemaBuilder(schemabuilder.BuilderOptions{PluginID: []string{PluginID}, ScanCode: scan})
	if err != nil {
		return nil, err
	}
	b := &builder{r: sb.Reflector(), enums: plugin.Enumerations()}
	sdkMapper := b.r.Mapper
	b.r.Mapper = func(t reflect.Type) *jsonschema.Schema {
		for _, e := range b.enums {
			if e.Type == t {
				return b.enumSchema(e)
			}
		}
		switch t {
		case reflect.TypeFor[plugin.ThresholdsJSON]():
			number := &jsonschema.Schema{Type: "number"}
			return &jsonschema.Schema{Title: "Thresholds", Type: "object",
				AdditionalProperties: &jsonschema.Schema{Type: "object", AdditionalProperties: number}}
		case reflect.TypeFor[plugin.TimeoutJSON]():
			return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "number"}, {Type: "string"}}}
		case reflect.TypeFor[plugin.SLOsJSON]():
			spec := b.reflect(reflect.TypeFor[slo.Spec]())
			spec.Title = "SLOSpec"
			return &jsonschema.Schema{Type: "array", Items: spec}
		}
		return sdkMapper(t)
	}
	return b, nil
}

// codePaths are the SDK's code paths of the given directories (from the repository's root),
// written as the comment reader keys them: the import path joined with the directory as given,
// which is read from the working directory.
func codePaths(dirs ...string) ([]schemabuilder.CodePaths, error) {
	root, err := filepath.Abs(Root())
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	here, err := filepath.Rel(root, wd)
	if err != nil {
		return nil, err
	}
	out := make([]schemabuilder.CodePaths, len(dirs))
	for i, dir := range dirs {
		rel, err := filepath.Rel(wd, filepath.Join(root, dir))
		if err != nil {
			return nil, err
		}
		out[i] = schemabuilder.CodePaths{BasePackage: path.Join(module, filepath.ToSlash(here)), CodePath: rel}
	}
	return out, nil
}

// enumSchema is a fresh schema of an enumeration: the reflector writes a field's description
// into the schema it is given.
func (b *builder) enumSchema(e plugin.Enumeration) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Title: e.Type.Name()}
	docs := map[string]string{}
	for _, v := range e.Values {
		s.Enum = append(s.Enum, v.Value)
		if v.Doc != "" {
			docs[v.Value] = v.Doc
		}
	}
	if len(docs) > 0 {
		s.Extras = map[string]any{"x-enum-description": docs}
	}
	return s
}

// typeDoc is a Go type's doc comment, as the reflector read it.
func (b *builder) typeDoc(t reflect.Type) string {
	return oneLine(b.r.CommentMap[t.PkgPath()+"."+t.Name()])
}

func (b *builder) reflect(t reflect.Type) *jsonschema.Schema {
	s := b.r.ReflectFromType(t)
	s.Version, s.ID, s.Title = "", "", t.Name()
	normalize(s)
	return s
}

// normalize writes descriptions on one line: doc comments wrap where the source does.
func normalize(s *jsonschema.Schema) {
	s.Description = oneLine(s.Description)
	if s.Items != nil {
		normalize(s.Items)
	}
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			normalize(p.Value)
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// queryModels are the query types' models, then the text form's.
func (b *builder) queryModels() ([]model, error) {
	var out []model
	for _, m := range plugin.QueryModels() {
		s := b.reflect(m.Model)
		defaults, err := withDefaults(s, m.Defaults)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.QueryType, err)
		}
		out = append(out, model{name: string(m.QueryType), queryType: m.QueryType, schema: s, defaults: defaults})
	}
	out = append(out, model{name: TextQueryName, schema: b.reflect(reflect.TypeFor[plugin.TextQuery]())})
	// The query types' own enumeration has each model's description as the meaning of its value.
	for i, e := range b.enums {
		if e.Type != reflect.TypeFor[plugin.QueryType]() {
			continue
		}
		values := append([]plugin.EnumValue(nil), e.Values...)
		for j := range values {
			for _, m := range out {
				if string(m.queryType) == values[j].Value {
					values[j].Doc = m.schema.Description
				}
			}
		}
		b.enums[i].Values = values
	}
	return out, nil
}

// jsonData is the schema of the data source's jsonData, with each setting's default. Grafana's
// own HTTP settings sit beside the plugin's, so other keys are allowed.
func (b *builder) jsonData() (*jsonschema.Schema, error) {
	c := plugin.SettingsContract()
	s := b.reflect(c.JSONData)
	s.AdditionalProperties = nil
	if _, err := withDefaults(s, c.Defaults); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults writes the fields that a value of the schema's Go type sets (its defaults) into
// the schema's properties, and returns them by JSON name in the properties' order.
func withDefaults(s *jsonschema.Schema, defaults any) (*orderedmap.OrderedMap[string, any], error) {
	raw, err := json.Marshal(defaults)
	if err != nil {
		return nil, err
	}
	var set map[string]any
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, err
	}
	out := orderedmap.New[string, any]()
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		if v, ok := set[p.Key]; ok {
			p.Value.Default = v
			out.Set(p.Key, v)
			delete(set, p.Key)
		}
	}
	for name := range set {
		return nil, fmt.Errorf("the default of %s is not a property of its schema", name)
	}
	return out, nil
}

// toSpec converts a reflected schema to the OpenAPI schema type the SDK's files hold.
func toSpec(s *jsonschema.Schema) (*spec.Schema, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := &spec.Schema{}
	return out, json.Unmarshal(raw, out)
}

// queryTypesFile is the SDK's QueryTypeDefinitionList of the models: each query type
// discriminated by its queryType, the text form without one. It carries no resource versions
// or timestamps, so that it changes only when the contract does.
func queryTypesFile(models []model) ([]byte, error) {
	list := sdkapi.QueryTypeDefinitionList{TypeMeta: sdkapi.TypeMeta{Kind: "QueryTypeDefinitionList", APIVersion: "datasource.grafana.app/" + APIVersion}}
	for _, m := range models {
		s, err := toSpec(m.schema)
		if err != nil {
			return nil, err
		}
		// The SDK's query schemas are draft-04, so that kube-openapi can read them.
		s.Schema = "https://json-schema.org/draft-04/schema"
		def := sdkapi.QueryTypeDefinition{ObjectMeta: sdkapi.ObjectMeta{Name: m.name},
			Spec: sdkapi.QueryTypeDefinitionSpec{Description: m.schema.Description, Schema: sdkapi.JSONSchema{Spec: s}}}
		if m.queryType != "" {
			def.Spec.Discriminators = sdkapi.NewDiscriminators("queryType", m.queryType)
		}
		list.Items = append(list.Items, def)
	}
	return indent(list)
}

// settingsFile is the SDK's settings schema: the data source URL (Prometheus) and jsonData, and
// the plugin's secure keys.
func settingsFile(jsonData *jsonschema.Schema) ([]byte, error) {
	jd, err := toSpec(jsonData)
	if err != nil {
		return nil, err
	}
	s := &spec.Schema{}
	s.Type = spec.StringOrArray{"object"}
	s.Description = "A vLLM Diagnosis data source: its URL is the Prometheus URL, with Grafana's standard HTTP settings"
	s.Required = []string{"url"}
	s.Properties = map[string]spec.Schema{
		"url":      *spec.StringProperty().WithDescription("The Prometheus URL: Prometheus, Thanos, Mimir, VictoriaMetrics, anything with the Prometheus HTTP API"),
		"jsonData": *jd,
	}
	settings := pluginschema.Settings{Spec: s}
	for _, k := range plugin.SettingsContract().Secure {
		settings.SecureValues = append(settings.SecureValues, pluginschema.SecureValueInfo{Key: k.Value, Description: k.Doc})
	}
	return indent(settings)
}

func indent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
