import { type QueryEditorProps, type SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, InlineSwitch, MultiSelect, RadioButtonGroup, Select, Text } from '@grafana/ui';
import { useCallback } from 'react';

import { rangeParams, type DataSource } from '../datasource';
import { structuredQuery } from '../expr';
import { selectors } from '../selectors';
import {
  BURN_SEVERITIES,
  DIAGNOSIS_FORMATS,
  EXPLAIN_FORMATS,
  OPTIMISATIONS,
  QUERY_DEFAULTS,
  QUERY_TYPES,
  SEVERITIES,
  SLO_FORMATS,
  type BurnSeverity,
  type DiagnosisFormat,
  type Optimisation,
  type QueryModel,
  type QueryType,
  type Severity,
  type SignalInfo,
  type SLOFormat,
  type VllmDataSourceOptions,
  type VllmQuery,
} from '../types';
import { isTemplateVariable, parseNumber, validateTime, validateTraceId } from '../validation';
import { ResourceNotice } from './ResourceNotice';
import { type ResourceState, useResource } from './useResource';
import { ValidatedInput } from './ValidatedInput';

type Props = QueryEditorProps<DataSource, VllmQuery, VllmDataSourceOptions>;

const LABEL_WIDTH = 16;
const ids = selectors.queryEditor;

/** Each query type's button; a query type the backend adds fails the typecheck until it has one. */
const QUERY_TYPE_LABELS: Record<QueryType, SelectableValue<QueryType>> = {
  signals: { label: 'Signals', description: 'Time series of named vLLM signals' },
  diagnosis: { label: 'Diagnosis', description: 'Findings of the symptom-to-cause rules' },
  requests: { label: 'Requests', description: 'vLLM request spans with the metric state of their moment' },
  explain: { label: 'Explain', description: 'One request, explained' },
  verdict: { label: 'Verdict', description: 'Did each optimisation work, against a baseline' },
  slo: { label: 'SLO', description: "The service-level objectives of the data source's settings" },
};

const QUERY_TYPE_OPTIONS = QUERY_TYPES.map((value) => ({ ...QUERY_TYPE_LABELS[value], value }));

/** Each query type's formats, the backend's lists; a type without any reads no format. */
const QUERY_TYPE_FORMATS: Record<QueryType, ReadonlyArray<NonNullable<QueryModel['format']>>> = {
  signals: [],
  diagnosis: DIAGNOSIS_FORMATS,
  requests: [],
  explain: EXPLAIN_FORMATS,
  verdict: [],
  slo: SLO_FORMATS,
};

/**
 * `format` if it is one of `formats`, else none: what a format picker shows of the query's format
 * (or its type's default), so that no button claims a format the backend rejects.
 */
function pickedFormat<F extends string>(formats: readonly F[], format: string | undefined): F | undefined {
  return formats.find((f) => f === format);
}

/** Each diagnosis format's button, in the backend's order. */
const FORMAT_LABELS: Record<DiagnosisFormat, SelectableValue<DiagnosisFormat>> = {
  findings: { label: 'Findings' },
  timeline: { label: 'Timeline' },
  alert: { label: 'Alert', description: 'One 0/1 series per rule and instance, for alert rules' },
  fleet: { label: 'Fleet', description: 'One line per instance, worst first: its headline finding or healthy' },
  recommendation: {
    label: 'Recommendation',
    description: 'The recommended value per rule and instance while a finding holds, for alert summaries',
  },
};

const FORMAT_OPTIONS = DIAGNOSIS_FORMATS.map((value) => ({ ...FORMAT_LABELS[value], value }));

const DEFAULT_FORMAT = QUERY_DEFAULTS.diagnosis.format;

/** Each slo format's button, in the backend's order. */
const SLO_FORMAT_LABELS: Record<SLOFormat, SelectableValue<SLOFormat>> = {
  status: { label: 'Status', description: 'Attainment, budget left and burn rates per objective and instance' },
  attribution: { label: 'Attribution', description: 'Which findings the misses of each objective happened under' },
  goodput: { label: 'Goodput', description: 'Requests per second that met every objective of their model, bounded' },
  burn: {
    label: 'Burn',
    description: 'Alert series: page or ticket while the error budget burns too fast, per instance',
  },
  budget: { label: 'Budget', description: 'Budget burn-down: the share of each error budget left over time' },
};

const SLO_FORMAT_OPTIONS = SLO_FORMATS.map((value) => ({ ...SLO_FORMAT_LABELS[value], value }));

const DEFAULT_SLO_FORMAT = QUERY_DEFAULTS.slo.format;

const SEVERITY_OPTIONS: Array<SelectableValue<Severity>> = SEVERITIES.map((s) => ({ label: s, value: s }));

/** Each burn severity's button, in the backend's order, after Both: none set, the backend's default. */
const BURN_SEVERITY_LABELS: Record<BurnSeverity, SelectableValue<BurnSeverity>> = {
  page: { label: 'Page', description: 'Only the page series: the budget burns fast enough to act now' },
  ticket: { label: 'Ticket', description: 'Only the ticket series: the budget burns too fast over days' },
};

const BURN_SEVERITY_OPTIONS: Array<SelectableValue<BurnSeverity | undefined>> = [
  { label: 'Both', value: undefined, description: 'Page and ticket series' },
  ...BURN_SEVERITIES.map((value) => ({ ...BURN_SEVERITY_LABELS[value], value })),
];

const OPTIMISATION_LABELS: Record<Optimisation, string> = {
  chunked_prefill: 'Chunked prefill',
  prefix_caching: 'Prefix caching',
  spec_decode: 'Speculative decoding',
  fp8_kv_cache: 'FP8 KV cache',
  concurrency: 'Concurrency',
};

const OPTIMISATION_OPTIONS = OPTIMISATIONS.map((value) => ({ label: OPTIMISATION_LABELS[value], value }));

function isEmpty(v: unknown): boolean {
  return v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
}

/** The defaults of the fields the query leaves empty. */
function unsetDefaults(query: VllmQuery, defaults: QueryModel): Partial<VllmQuery> {
  return Object.fromEntries(Object.entries(defaults).filter(([key]) => isEmpty(query[key as keyof QueryModel])));
}

function asOption(value: string): SelectableValue<string> {
  return { label: value, value };
}

function signalLabel(s: SignalInfo): string {
  const name = s.label || s.name;
  return s.unit ? `${name} (${s.unit})` : name;
}

/** The signal catalog as select options, grouped as the backend groups them. */
function signalOptions(catalog: SignalInfo[]): Array<SelectableValue<string>> {
  const groups = new Map<string, Array<SelectableValue<string>>>();
  for (const s of catalog) {
    const group = s.group || 'Other';
    const options = groups.get(group) ?? [];
    options.push({ label: signalLabel(s), value: s.name, description: s.description });
    groups.set(group, options);
  }
  return Array.from(groups, ([label, options]) => ({ label, options }));
}

function validateNonNegative(v: string): string | undefined {
  if (v.trim() === '') {
    return undefined;
  }
  const n = parseNumber(v);
  return n === undefined || n < 0 ? 'Enter a number of seconds, 0 or more' : undefined;
}

function validateLimit(v: string): string | undefined {
  if (v.trim() === '') {
    return undefined;
  }
  const n = parseNumber(v);
  return n === undefined || !Number.isInteger(n) || n < 1 ? 'Enter a whole number, 1 or more' : undefined;
}

function validateTopK(v: string): string | undefined {
  if (v.trim() === '' || isTemplateVariable(v)) {
    return undefined;
  }
  const n = parseNumber(v);
  return n === undefined || !Number.isInteger(n) || n < 0
    ? 'Enter a whole number, 0 or more, or a variable'
    : undefined;
}

interface SubEditorProps {
  query: VllmQuery;
  update: (patch: Partial<VllmQuery>) => void;
}

interface FieldProps<F> extends SubEditorProps {
  field: F;
}

/** The query's fields typed as text; NUMBER_FIELDS of them are numbers. */
type TextFieldName = keyof Pick<VllmQuery, 'topK' | 'minTtft' | 'limit' | 'traceId' | 'baselineFrom' | 'baselineTo'>;

const NUMBER_FIELDS: ReadonlySet<TextFieldName> = new Set(['minTtft', 'limit']);

interface TextFieldSpec {
  label: string;
  /** LABEL_WIDTH unless set: a field second in its row (top k, limit) has a shorter label. */
  labelWidth?: number;
  width: number;
  tooltip?: string;
  placeholder: string;
  validate: (text: string) => string | undefined;
}

const TEXT_FIELDS: Record<TextFieldName, TextFieldSpec> = {
  topK: {
    label: 'Top k',
    labelWidth: 10,
    width: 12,
    tooltip:
      "With more instances than this, each signal's worst instances and the fleet median only; a whole number or a variable such as $topk; empty for every instance",
    placeholder: 'all',
    validate: validateTopK,
  },
  minTtft: {
    label: 'Min TTFT (s)',
    width: 12,
    tooltip: 'Only requests whose time to first token is at least this many seconds',
    placeholder: '0',
    validate: validateNonNegative,
  },
  limit: {
    label: 'Limit',
    labelWidth: 10,
    width: 12,
    placeholder: String(QUERY_DEFAULTS.requests.limit),
    validate: validateLimit,
  },
  traceId: {
    label: 'Trace id',
    width: 40,
    tooltip: 'The trace of one vLLM request: hexadecimal, or a template variable',
    placeholder: '4bf92f3577b34da6a3ce929d0e0e4736',
    validate: validateTraceId,
  },
  baselineFrom: {
    label: 'Baseline from',
    width: 28,
    tooltip:
      "Start of the baseline window: RFC 3339 or a relative time such as now-7d; empty: the window of the range's length just before it",
    placeholder: 'now-7d',
    validate: validateTime,
  },
  baselineTo: {
    label: 'Baseline to',
    width: 28,
    tooltip: 'End of the baseline window: RFC 3339 or a relative time such as now-6d',
    placeholder: 'now-6d',
    validate: validateTime,
  },
};

/** One text field of the query: it shows the saved value and hands on a typed one its check accepts; empty unsets it. */
function TextField({ query, field, update }: FieldProps<TextFieldName>) {
  const { labelWidth = LABEL_WIDTH, ...spec } = TEXT_FIELDS[field];
  const value = query[field];
  return (
    <ValidatedInput
      {...spec}
      labelWidth={labelWidth}
      testId={ids[field]}
      value={value === undefined ? '' : String(value)}
      onCommit={(v) => update({ [field]: v === '' ? undefined : NUMBER_FIELDS.has(field) ? parseNumber(v) : v })}
    />
  );
}

/** The query's on/off fields; off is the backend's default for each. */
type SwitchFieldName = keyof Pick<VllmQuery, 'headlineOnly' | 'oneInstance' | 'ruleRows' | 'anomalousOnly'>;

const SWITCH_FIELDS: Record<SwitchFieldName, { label: string; tooltip: string }> = {
  headlineOnly: {
    label: 'Headline only',
    tooltip: "Only each instance's headline finding, its likely bottleneck; off to see secondary findings too",
  },
  oneInstance: {
    label: 'One instance',
    tooltip: 'Findings only when one instance is in view, as graph annotations want; with several, none and a notice',
  },
  ruleRows: {
    label: 'Rule rows',
    tooltip:
      'Below each instance, a row for each rule that was pending or firing; off: one row per instance (every rule when one instance is in view)',
  },
  anomalousOnly: { label: 'Anomalous only', tooltip: 'Only requests with an anomaly reason' },
};

/** One on/off field of the query. */
function SwitchField({ query, field, update }: FieldProps<SwitchFieldName>) {
  return (
    <InlineField {...SWITCH_FIELDS[field]} labelWidth={LABEL_WIDTH}>
      <InlineSwitch
        data-testid={ids[field]}
        value={query[field] ?? false}
        onChange={(e) => update({ [field]: e.currentTarget.checked })}
      />
    </InlineField>
  );
}

/** The query's list fields; none chosen means all (for optimisations: detect them from the metrics). */
type ListFieldName = keyof Pick<VllmQuery, 'signals' | 'rules' | 'severities' | 'optimisations' | 'slos'>;

interface ListFieldSpec {
  label: string;
  tooltip: string;
  width: number;
  placeholder: string;
  /** Values beside the options: a name the backend may know, a template variable. */
  allowCustomValue?: boolean;
}

const LIST_FIELDS: Record<ListFieldName, ListFieldSpec> = {
  signals: {
    label: 'Signals',
    tooltip: 'Named, version-independent vLLM signals',
    width: 64,
    placeholder: 'Choose signals',
    allowCustomValue: true,
  },
  rules: {
    label: 'Rules',
    tooltip: 'Evaluate only these rules; empty for all',
    width: 48,
    placeholder: 'All rules',
    allowCustomValue: true,
  },
  severities: {
    label: 'Severities',
    tooltip: 'Only findings of these severities; empty for all',
    width: 36,
    placeholder: 'All severities',
  },
  optimisations: {
    label: 'Optimisations',
    tooltip: 'Optimisations in use, for when the metrics cannot tell; empty to detect them',
    width: 64,
    placeholder: 'Detect from the metrics',
  },
  slos: {
    label: 'Objectives',
    tooltip: 'Only these objectives; empty for all',
    width: 48,
    placeholder: 'All objectives',
    allowCustomValue: true,
  },
};

interface ListFieldProps extends FieldProps<ListFieldName> {
  options: Array<SelectableValue<string>>;
  isLoading?: boolean;
}

/** One list field of the query: a chosen value shows as its option where there is one, else as itself. */
function ListField({ query, field, update, ...select }: ListFieldProps) {
  const { label, tooltip, ...spec } = LIST_FIELDS[field];
  return (
    <InlineField label={label} labelWidth={LABEL_WIDTH} tooltip={tooltip}>
      <MultiSelect
        data-testid={ids[field]}
        {...spec}
        {...select}
        value={query[field] ?? []}
        onChange={(v: Array<SelectableValue<string>>) =>
          update({ [field]: v.map((o) => o.value ?? '').filter(Boolean) })
        }
      />
    </InlineField>
  );
}

interface RadioFieldProps<T> {
  label: string;
  tooltip?: string;
  testId: string;
  options: Array<SelectableValue<T>>;
  value: T | undefined;
  onChange: (value: T) => void;
}

/** A choice of one among a few buttons: the query type, a format, a severity. */
function RadioField<T>({ label, tooltip, testId, ...group }: RadioFieldProps<T>) {
  return (
    <InlineField label={label} labelWidth={LABEL_WIDTH} tooltip={tooltip}>
      <div data-testid={testId}>
        <RadioButtonGroup {...group} />
      </div>
    </InlineField>
  );
}

type FormatFieldProps<F> = Omit<RadioFieldProps<F>, 'label' | 'onChange'> & Pick<SubEditorProps, 'update'>;

/** A query type's format picker; its value is pickedFormat's. */
function FormatField<F extends QueryModel['format']>({ update, ...radio }: FormatFieldProps<F>) {
  return <RadioField label="Format" {...radio} onChange={(format) => update({ format })} />;
}

/** The query's label filters, the fields every query type has. */
type LabelFieldName = keyof Pick<VllmQuery, 'instance' | 'model'>;

const LABEL_FIELDS: Record<LabelFieldName, { label: string; tooltip: string }> = {
  instance: {
    label: 'Instance',
    tooltip: 'An instance label value, a regular expression or a template variable; empty for all',
  },
  model: { label: 'Model', tooltip: 'A model name, a regular expression or a template variable; empty for all' },
};

interface LabelFieldProps extends FieldProps<LabelFieldName> {
  values: ResourceState<string[]>;
  variables: string[];
}

/** An instance or model picker: values from the backend, template variables, or free text. */
function LabelField({ query, field, update, values, variables }: LabelFieldProps) {
  const options = [...variables, ...(values.value ?? [])].map(asOption);
  const value = query[field];
  return (
    <InlineField {...LABEL_FIELDS[field]} labelWidth={LABEL_WIDTH}>
      <Select
        data-testid={ids[field]}
        width={32}
        isClearable
        allowCustomValue
        isLoading={values.loading}
        placeholder="All"
        options={options}
        value={value ? asOption(value) : null}
        onChange={(v: SelectableValue<string> | null) => update({ [field]: v?.value ?? '' })}
      />
    </InlineField>
  );
}

export function QueryEditor({ query: rawQuery, onChange, onRunQuery, datasource, range }: Props) {
  const query = structuredQuery(rawQuery);
  const queryType = query.queryType ?? 'signals';
  const variables = datasource.variableNames();

  // A change saves the query the editor shows: one without a query type (a text form the editor
  // cannot read, or none) gets the type shown and loses its text form, which the backend would
  // read first.
  const update = (patch: Partial<VllmQuery>) => {
    const { expr: _expr, ...fields } = query;
    onChange({ ...(query.queryType ? query : { ...fields, queryType }), ...patch });
    onRunQuery();
  };

  // A format the new type does not have is dropped, as the backend would reject it; then the new
  // type's defaults fill the fields the query leaves empty, so that the editor shows what the
  // backend reads.
  const onQueryTypeChange = (next: QueryType) => {
    const format = pickedFormat(QUERY_TYPE_FORMATS[next], query.format);
    update({ queryType: next, format, ...unsetDefaults({ ...query, format }, QUERY_DEFAULTS[next]) });
  };

  // The pickers list the values seen in the panel's time range (the backend's window), reloaded
  // when the range moves; the range object itself is new on every render, its bounds are not.
  const from = range?.from.valueOf();
  const to = range?.to.valueOf();
  const loadInstances = useCallback(
    () => datasource.listValues('instances', rangeParams(from, to)),
    [datasource, from, to]
  );
  const loadModels = useCallback(() => datasource.listValues('models', rangeParams(from, to)), [datasource, from, to]);
  const instances = useResource(loadInstances);
  const models = useResource(loadModels);

  return (
    <>
      {rawQuery.expr && !rawQuery.queryType && (
        <div data-testid={ids.expr}>
          <Text variant="bodySmall" color="secondary">
            Opened from the text form “{rawQuery.expr}”; changing a field below saves it as a structured query.
          </Text>
        </div>
      )}
      <InlineFieldRow>
        <RadioField
          label="Query type"
          testId={ids.queryType}
          options={QUERY_TYPE_OPTIONS}
          value={queryType}
          onChange={onQueryTypeChange}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <LabelField query={query} field="instance" values={instances} variables={variables} update={update} />
        <LabelField query={query} field="model" values={models} variables={variables} update={update} />
      </InlineFieldRow>
      <ResourceNotice what="instances" error={instances.error} testId={ids.resourceError} />
      <ResourceNotice what="models" error={models.error} testId={ids.resourceError} />
      {queryType === 'signals' && (
        <SignalsEditor query={query} datasource={datasource} variables={variables} update={update} />
      )}
      {queryType === 'diagnosis' && (
        <DiagnosisEditor query={query} datasource={datasource} variables={variables} update={update} />
      )}
      {queryType === 'requests' && <RequestsEditor query={query} update={update} />}
      {queryType === 'explain' && (
        <InlineFieldRow>
          <TextField query={query} field="traceId" update={update} />
        </InlineFieldRow>
      )}
      {queryType === 'verdict' && (
        <VerdictEditor query={query} datasource={datasource} variables={variables} update={update} />
      )}
      {queryType === 'slo' && <SLOEditor query={query} objectives={datasource.objectiveNames()} update={update} />}
    </>
  );
}

interface CatalogEditorProps extends SubEditorProps {
  datasource: DataSource;
  variables: string[];
}

function SignalsEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const load = useCallback(() => datasource.listSignals(), [datasource]);
  const catalog = useResource(load);
  const options = [
    ...signalOptions(catalog.value ?? []),
    ...(variables.length ? [{ label: 'Template variables', options: variables.map(asOption) }] : []),
  ];
  return (
    <>
      <InlineFieldRow>
        <ListField query={query} field="signals" options={options} isLoading={catalog.loading} update={update} />
        <TextField query={query} field="topK" update={update} />
      </InlineFieldRow>
      <ResourceNotice what="the signal catalog" error={catalog.error} testId={ids.resourceError} />
    </>
  );
}

/** The backend's rules, and the rule options of a picker: each rule with its symptom, then the template variables. */
function useRuleOptions(datasource: DataSource, variables: string[]) {
  const load = useCallback(() => datasource.listRules(), [datasource]);
  const rules = useResource(load);
  const options = [
    ...(rules.value ?? []).map((r) => ({ label: r.id, value: r.id, description: r.symptom })),
    ...variables.map(asOption),
  ];
  return { rules, options };
}

function DiagnosisEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const { rules, options } = useRuleOptions(datasource, variables);
  const format = pickedFormat(DIAGNOSIS_FORMATS, query.format ?? DEFAULT_FORMAT);
  return (
    <>
      <InlineFieldRow>
        <FormatField testId={ids.format} options={FORMAT_OPTIONS} value={format} update={update} />
        <ListField query={query} field="rules" options={options} isLoading={rules.loading} update={update} />
      </InlineFieldRow>
      {format === 'findings' && (
        <InlineFieldRow>
          <SwitchField query={query} field="headlineOnly" update={update} />
          <ListField query={query} field="severities" options={SEVERITY_OPTIONS} update={update} />
          <SwitchField query={query} field="oneInstance" update={update} />
        </InlineFieldRow>
      )}
      {format === 'timeline' && (
        <InlineFieldRow>
          <SwitchField query={query} field="ruleRows" update={update} />
        </InlineFieldRow>
      )}
      <ResourceNotice what="the rules" error={rules.error} testId={ids.resourceError} />
    </>
  );
}

function RequestsEditor({ query, update }: SubEditorProps) {
  return (
    <InlineFieldRow>
      <SwitchField query={query} field="anomalousOnly" update={update} />
      <TextField query={query} field="minTtft" update={update} />
      <TextField query={query} field="limit" update={update} />
    </InlineFieldRow>
  );
}

function VerdictEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const { rules, options } = useRuleOptions(datasource, variables);
  return (
    <>
      <InlineFieldRow>
        <TextField query={query} field="baselineFrom" update={update} />
        <TextField query={query} field="baselineTo" update={update} />
      </InlineFieldRow>
      <InlineFieldRow>
        <ListField query={query} field="optimisations" options={OPTIMISATION_OPTIONS} update={update} />
      </InlineFieldRow>
      <InlineFieldRow>
        <InlineField
          label="Rule's promise"
          labelWidth={LABEL_WIDTH}
          tooltip="A rule whose advice was applied between the windows: also check that the signal it promises to move (preemptions for kv_cache_saturated, the hit rate for prefix_cache_miss, …) moved; give the finding's window as the baseline"
        >
          <Select
            data-testid={ids.verdictRule}
            width={48}
            isClearable
            allowCustomValue
            isLoading={rules.loading}
            placeholder="No rule"
            options={options}
            value={query.rule ? asOption(query.rule) : null}
            onChange={(v: SelectableValue<string> | null) => update({ rule: v?.value || undefined })}
          />
        </InlineField>
      </InlineFieldRow>
      <ResourceNotice what="the rules" error={rules.error} testId={ids.resourceError} />
    </>
  );
}

interface SLOEditorProps extends SubEditorProps {
  /** The objectives' names in the data source's settings. */
  objectives: string[];
}

function SLOEditor({ query, objectives, update }: SLOEditorProps) {
  const format = pickedFormat(SLO_FORMATS, query.format ?? DEFAULT_SLO_FORMAT);
  return (
    <>
      <InlineFieldRow>
        <FormatField testId={ids.sloFormat} options={SLO_FORMAT_OPTIONS} value={format} update={update} />
        <ListField query={query} field="slos" options={objectives.map(asOption)} update={update} />
      </InlineFieldRow>
      {format === 'burn' && (
        <InlineFieldRow>
          <RadioField
            label="Severity"
            tooltip="The series of one severity only, as an alert rule that pages or files a ticket asks; both by default"
            testId={ids.burnSeverity}
            options={BURN_SEVERITY_OPTIONS}
            value={query.severity}
            onChange={(severity) => update({ severity })}
          />
        </InlineFieldRow>
      )}
    </>
  );
}
