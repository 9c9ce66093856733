package plugin

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/traces"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// What the contract's generator (pkg/plugin/contract, run by go generate ./pkg/plugin) reads:
// the query types with their models, the enumerations, the settings' model and defaults.

//go:generate go run ../cmd/contract-files -root ../..

// queryTypes are the query types, each with its handler and the values it reads for the fields
// a query leaves empty (each from the code that applies it): a new query type is its model
// (query.go), its handler, and one line here.
var queryTypes = []queryKind{
	kind(handleSignals, SignalsQuery{Signals: strs(plan.DefaultSignals)}),
	kind(handleDiagnosis, DiagnosisQuery{Format: FormatFindings}),
	kind(handleRequests, RequestsQuery{Limit: traces.DefaultLimit}),
	kind(handleExplain, ExplainQuery{}),
	kind(handleVerdict, VerdictQuery{}),
	kind(handleSLO, SLOQuery{Format: FormatSLOStatus}),
}

// queryKind is one query type: how to read its model and how to answer it.
type queryKind struct {
	queryType QueryType
	model     reflect.Type
	defaults  Query
	// parse reads each JSON in turn into one model, a later one's fields over an earlier one's.
	parse  func(raws ...json.RawMessage) (Query, error)
	handle func(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse
}

func kind[T Query](h func(context.Context, *Datasource, backend.DataQuery, T) backend.DataResponse, defaults T) queryKind {
	return queryKind{
		queryType: defaults.QueryType(),
		model:     reflect.TypeFor[T](),
		defaults:  defaults,
		parse: func(raws ...json.RawMessage) (Query, error) {
			var q T
			for _, raw := range raws {
				if err := json.Unmarshal(raw, &q); err != nil {
					return nil, err
				}
			}
			return q, nil
		},
		handle: func(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
			return h(ctx, d, q, query.(T))
		},
	}
}

func (k queryKind) enumValue() EnumValue { return EnumValue{Value: string(k.queryType)} }

// QueryModel is one query type, the Go type of its model, and the values the plugin reads for
// the fields a query leaves empty.
type QueryModel struct {
	QueryType QueryType
	Model     reflect.Type
	Defaults  Query
}

// QueryModels lists the query types in the order the editor shows them.
func QueryModels() []QueryModel {
	out := make([]QueryModel, len(queryTypes))
	for i, k := range queryTypes {
		out[i] = QueryModel{QueryType: k.queryType, Model: k.model, Defaults: k.defaults}
	}
	return out
}

// EnumValue is one value of an enumeration of the contract, with what it means (may be empty).
type EnumValue struct {
	Value string
	Doc   string
}

// Enumeration is a string type of the query models or the settings whose values are fixed.
type Enumeration struct {
	Type   reflect.Type
	Values []EnumValue
}

// Enumerations lists the contract's enumerations, each from the one list the code reads.
func Enumerations() []Enumeration {
	indicators := make([]EnumValue, len(slo.Indicators))
	for i, ind := range slo.Indicators {
		indicators[i] = EnumValue{Value: string(ind.Indicator), Doc: ind.Doc}
	}
	burnSeverities := make([]EnumValue, len(slo.BurnSeverities))
	for i, sev := range slo.BurnSeverities {
		burnSeverities[i] = EnumValue{Value: string(sev), Doc: burnSeverityDoc(sev)}
	}
	optimisations := make([]EnumValue, len(verdict.All))
	for i, o := range verdict.All {
		optimisations[i] = EnumValue{Value: string(o)}
	}
	return []Enumeration{
		{Type: reflect.TypeFor[QueryType](), Values: enumValues(queryTypes)},
		{Type: reflect.TypeFor[DiagnosisFormat](), Values: enumValues(diagnosisFormats)},
		{Type: reflect.TypeFor[ExplainFormat](), Values: enumValues(explainFormats)},
		{Type: reflect.TypeFor[SLOFormat](), Values: enumValues(sloFormats)},
		{Type: reflect.TypeFor[diagnosis.Severity](), Values: severities},
		{Type: reflect.TypeFor[verdict.Optimisation](), Values: optimisations},
		{Type: reflect.TypeFor[TracesBackend](), Values: enumValues(tracesBackends)},
		{Type: reflect.TypeFor[slo.Indicator](), Values: indicators},
		{Type: reflect.TypeFor[slo.BurnSeverity](), Values: burnSeverities},
	}
}

// enumerated is an entry of the list an enumeration's values come from: queryTypes,
// diagnosisFormats, tracesBackends, ….
type enumerated interface{ enumValue() EnumValue }

func (v EnumValue) enumValue() EnumValue { return v }

func enumValues[T enumerated](list []T) []EnumValue {
	out := make([]EnumValue, len(list))
	for i, x := range list {
		out[i] = x.enumValue()
	}
	return out
}

// lookup returns the entry of list whose value is v.
func lookup[T enumerated, V ~string](list []T, v V) (T, bool) {
	for _, x := range list {
		if x.enumValue().Value == string(v) {
			return x, true
		}
	}
	var zero T
	return zero, false
}

// valueList names the values of list, for messages.
func valueList[T enumerated](list []T) string {
	names := make([]string, len(list))
	for i, x := range list {
		names[i] = x.enumValue().Value
	}
	return strings.Join(names, ", ")
}

// SettingsModel is the data source's jsonData, its defaults, and its secure keys (secureJsonData)
// with what each holds.
type SettingsModel struct {
	JSONData reflect.Type
	Defaults JSONData
	Secure   []EnumValue
}

// SettingsContract describes the settings' contract.
func SettingsContract() SettingsModel {
	return SettingsModel{JSONData: reflect.TypeFor[JSONData](), Defaults: settingsDefaults, Secure: secureKeys}
}
