package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	sdkapi "github.com/grafana/grafana-plugin-sdk-go/experimental/apis/datasource/v0alpha1"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/pluginschema"
	"github.com/grafana/grafana-plugin-sdk-go/experimental/schemabuilder"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks stored queries and data source settings against the committed schema
// files (TestFilesAreCurrent keeps them what pkg/plugin declares).
type Validator struct {
	target, request querySchema
	settings        *jsonschema.Schema
	jsonDataNames   []string
}

// querySchema is the SDK's assembly of the query types (one of them), and each of its
// branches by its discriminating queryType (TextQueryName for the text form's), whose errors
// say what is wrong with a query of that type alone.
type querySchema struct {
	all    *jsonschema.Schema
	byType map[string]*jsonschema.Schema
	types  []string
}

// NewValidator reads the schema files under the repository's root. The query types are
// assembled as the SDK assembles a data source's queries (schemabuilder.GetQuerySchema): the
// fields every Grafana query has, the data source's type, and exactly one query type, chosen
// by its queryType, or the text form; once as a dashboard saves a target, once as a request
// (and an alert rule's model) carries it, with intervalMs and maxDataPoints.
func NewValidator(root string) (*Validator, error) {
	raw, err := os.ReadFile(filepath.Join(root, QueryTypesFile))
	if err != nil {
		return nil, err
	}
	var defs sdkapi.QueryTypeDefinitionList
	if err := json.Unmarshal(raw, &defs); err != nil {
		return nil, fmt.Errorf("%s: %w", QueryTypesFile, err)
	}
	v := &Validator{}
	if v.target, err = newQuerySchema(defs, schemabuilder.SchemaTypeSaveModel); err != nil {
		return nil, err
	}
	if v.request, err = newQuerySchema(defs, schemabuilder.SchemaTypeQueryPayload); err != nil {
		return nil, err
	}

	raw, err = os.ReadFile(filepath.Join(root, SettingsFile))
	if err != nil {
		return nil, err
	}
	var settings pluginschema.Settings
	if err := pluginschema.Load(raw, &settings); err != nil {
		return nil, fmt.Errorf("%s: %w", SettingsFile, err)
	}
	if settings.Spec == nil {
		return nil, fmt.Errorf("%s has no spec", SettingsFile)
	}
	for name := range settings.Spec.Properties["jsonData"].Properties {
		v.jsonDataNames = append(v.jsonDataNames, name)
	}
	slices.Sort(v.jsonDataNames)
	if v.settings, err = compile(settings.Spec, "settings"); err != nil {
		return nil, err
	}
	return v, nil
}

func newQuerySchema(defs sdkapi.QueryTypeDefinitionList, mode schemabuilder.SchemaType) (querySchema, error) {
	s, err := schemabuilder.GetQuerySchema(schemabuilder.QuerySchemaOptions{PluginID: []string{PluginID}, QueryTypes: defs.Items, Mode: mode})
	if err != nil {
		return querySchema{}, err
	}
	if len(s.OneOf) != len(defs.Items) {
		return querySchema{}, fmt.Errorf("the SDK assembled %d query types of %d", len(s.OneOf), len(defs.Items))
	}
	qs := querySchema{byType: map[string]*jsonschema.Schema{}}
	if qs.all, err = compile(s, string(mode)); err != nil {
		return querySchema{}, err
	}
	for i, def := range defs.Items {
		name := TextQueryName
		if len(def.Spec.Discriminators) > 0 {
			name = def.Spec.Discriminators[0].Value
			qs.types = append(qs.types, name)
		}
		if qs.byType[name], err = compile(s.OneOf[i], string(mode)+"-"+name); err != nil {
			return querySchema{}, err
		}
	}
	return qs, nil
}

// check validates a query; its error is that of the query's own type, or names the query
// types when its queryType is none of them.
func (qs querySchema) check(raw json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	err = qs.all.Validate(inst)
	if err == nil {
		return nil
	}
	var head struct {
		QueryType *string `json:"queryType"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return err
	}
	if head.QueryType == nil {
		if textErr := qs.byType[TextQueryName].Validate(inst); textErr != nil {
			return fmt.Errorf("a query without a queryType is the text form (expr alone): %w", textErr)
		}
		return err
	}
	own, ok := qs.byType[*head.QueryType]
	if !ok {
		return fmt.Errorf("queryType %q is not one of %s", *head.QueryType, strings.Join(qs.types, ", "))
	}
	if ownErr := own.Validate(inst); ownErr != nil {
		return fmt.Errorf("not a valid %s query: %w", *head.QueryType, ownErr)
	}
	return err
}

// compile compiles a draft-04 schema. Its $schema names draft-04 by an https URL, which the
// validator does not know: it is dropped, and draft-04 is the default.
func compile(schema any, name string) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	dropSchemaKeyword(doc)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

func dropSchemaKeyword(doc any) {
	switch d := doc.(type) {
	case map[string]any:
		delete(d, "$schema")
		for _, v := range d {
			dropSchemaKeyword(v)
		}
	case []any:
		for _, v := range d {
			dropSchemaKeyword(v)
		}
	}
}

// Target checks a query as a dashboard stores it (a panel's target or an annotation's).
func (v *Validator) Target(raw json.RawMessage) error { return v.target.check(raw) }

// Request checks a query as a request carries it, such as an alert rule's model.
func (v *Validator) Request(raw json.RawMessage) error { return v.request.check(raw) }

// Settings checks a data source's URL and jsonData.
func (v *Validator) Settings(url string, jsonData json.RawMessage) error {
	raw, err := json.Marshal(map[string]any{"url": url, "jsonData": jsonData})
	if err != nil {
		return err
	}
	return validate(v.settings, raw)
}

// JSONDataNames are the jsonData settings of the plugin, sorted.
func (v *Validator) JSONDataNames() []string { return v.jsonDataNames }

func validate(s *jsonschema.Schema, raw json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
