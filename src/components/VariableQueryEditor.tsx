import { type DataSourceApi, type QueryEditorProps, type SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { selectors } from '../selectors';
import { DEFAULT_VARIABLE_QUERY, type VllmDataSourceOptions, type VllmQuery, type VllmVariableQuery } from '../types';
import { ValidatedInput } from './ValidatedInput';

// The editor needs nothing of this plugin's data source beyond Grafana's interface, so it does not
// import the data source module (which imports the variable support that imports this editor).
type Props = QueryEditorProps<
  DataSourceApi<VllmQuery, VllmDataSourceOptions>,
  VllmQuery,
  VllmDataSourceOptions,
  VllmVariableQuery
>;

const ids = selectors.variableEditor;

type Kind = VllmVariableQuery['kind'];

const KIND_OPTIONS: Array<SelectableValue<Kind>> = [
  { label: 'Instances', value: 'instances' },
  { label: 'Models', value: 'models' },
  { label: 'Anomalous requests', value: 'anomalousRequests' },
  {
    label: 'Trace data source',
    value: 'traceDatasource',
    description: "The uid of the data source's trace data source, for a trace panel",
  },
];

/** The filters each kind reads. */
const KIND_FILTERS: Record<Kind, Array<'instance' | 'model'>> = {
  instances: ['model'],
  models: ['instance'],
  anomalousRequests: ['instance', 'model'],
  traceDatasource: [],
};

function noCheck(): undefined {
  return undefined;
}

/**
 * Reads a saved variable query, including the plain string form of older dashboards and the empty
 * string of a new variable; the editor and the variable support read it alike.
 */
export function variableQuery(query: VllmVariableQuery | string | undefined): VllmVariableQuery {
  if (typeof query === 'string') {
    return { ...DEFAULT_VARIABLE_QUERY, kind: query === 'models' ? 'models' : DEFAULT_VARIABLE_QUERY.kind };
  }
  return {
    ...query,
    refId: query?.refId ?? DEFAULT_VARIABLE_QUERY.refId,
    kind: query?.kind ?? DEFAULT_VARIABLE_QUERY.kind,
  };
}

/**
 * Template variable values: the vLLM instances or models, optionally narrowed by the other label;
 * the trace ids of the anomalous requests, narrowed by both; or the trace data source's uid.
 */
export function VariableQueryEditor({ query: raw, onChange }: Props) {
  const query = variableQuery(raw);
  // Each filter stays on its own label, so switching back and forth loses nothing; only those
  // of the listed kind are sent.
  const filters = KIND_FILTERS[query.kind];
  const onKindChange = (kind: Kind) => onChange({ ...query, kind });

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Values" labelWidth={20}>
          <div data-testid={ids.kind}>
            <RadioButtonGroup options={KIND_OPTIONS} value={query.kind} onChange={onKindChange} />
          </div>
        </InlineField>
      </InlineFieldRow>
      {filters.map((key) => (
        <InlineFieldRow key={key}>
          <ValidatedInput
            label={key === 'model' ? 'Of model' : 'On instance'}
            labelWidth={20}
            width={40}
            tooltip="Optional: a value, a regular expression or a template variable"
            testId={ids[key]}
            placeholder="All"
            value={query[key]}
            validate={noCheck}
            onCommit={(v) => onChange({ ...query, [key]: v === '' ? undefined : v })}
          />
        </InlineFieldRow>
      ))}
    </>
  );
}
