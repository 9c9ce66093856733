import { type QueryEditorProps, type SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, InlineSwitch, MultiSelect, RadioButtonGroup, Select, Text } from '@grafana/ui';
import { useCallback } from 'react';

import { rangeParams, type DataSource } from '../datasource';
import { structuredQuery } from '../expr';
import { selectors } from '../selectors';
import {
  DIAGNOSIS_FORMATS,
  OPTIMISATIONS,
  QUERY_DEFAULTS,
  QUERY_TYPES,
  SEVERITIES,
  SLO_FORMATS,
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

interface LabelPickerProps {
  label: string;
  tooltip: string;
  testId: string;
  value?: string;
  values: ResourceState<string[]>;
  variables: string[];
  onChange: (value: string) => void;
}

/** An instance or model picker: values from the backend, template variables, or free text. */
function LabelPicker({ label, tooltip, testId, value, values, variables, onChange }: LabelPickerProps) {
  const options = [...variables, ...(values.value ?? [])].map(asOption);
  return (
    <InlineField label={label} labelWidth={LABEL_WIDTH} tooltip={tooltip}>
      <Select
        data-testid={testId}
        width={32}
        isClearable
        allowCustomValue
        isLoading={values.loading}
        placeholder="All"
        options={options}
        value={value ? asOption(value) : null}
        onChange={(v: SelectableValue<string> | null) => onChange(v?.value ?? '')}
      />
    </InlineField>
  );
}

interface ChoicesPickerProps<T extends string> {
  label: string;
  tooltip: string;
  testId: string;
  width: number;
  placeholder: string;
  options: Array<SelectableValue<T>>;
  value?: T[];
  onChange: (value: T[]) => void;
}

/** Several of a fixed set of values (severities, optimisations); none chosen means all or detect. */
function ChoicesPicker<T extends string>({
  label,
  tooltip,
  testId,
  onChange,
  value,
  ...select
}: ChoicesPickerProps<T>) {
  return (
    <InlineField label={label} labelWidth={LABEL_WIDTH} tooltip={tooltip}>
      <MultiSelect
        data-testid={testId}
        {...select}
        value={value ?? []}
        onChange={(v: Array<SelectableValue<T>>) =>
          onChange(v.map((o) => o.value).filter((x): x is T => x !== undefined))
        }
      />
    </InlineField>
  );
}

export function QueryEditor({ query: rawQuery, onChange, onRunQuery, datasource, range }: Props) {
  const query = structuredQuery(rawQuery);
  const queryType = query.queryType ?? 'signals';
  const variables = datasource.variableNames();

  const update = (patch: Partial<VllmQuery>) => {
    onChange({ ...query, ...patch });
    onRunQuery();
  };

  // The new type's defaults fill the fields the query leaves empty, so that the editor shows
  // what the backend reads.
  const onQueryTypeChange = (next: QueryType) => {
    update({ queryType: next, ...unsetDefaults(query, QUERY_DEFAULTS[next]) });
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
        <InlineField label="Query type" labelWidth={LABEL_WIDTH}>
          <div data-testid={ids.queryType}>
            <RadioButtonGroup options={QUERY_TYPE_OPTIONS} value={queryType} onChange={onQueryTypeChange} />
          </div>
        </InlineField>
      </InlineFieldRow>
      <InlineFieldRow>
        <LabelPicker
          label="Instance"
          tooltip="An instance label value, a regular expression or a template variable; empty for all"
          testId={ids.instance}
          value={query.instance}
          values={instances}
          variables={variables}
          onChange={(instance) => update({ instance })}
        />
        <LabelPicker
          label="Model"
          tooltip="A model name, a regular expression or a template variable; empty for all"
          testId={ids.model}
          value={query.model}
          values={models}
          variables={variables}
          onChange={(model) => update({ model })}
        />
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
          <ValidatedInput
            label="Trace id"
            labelWidth={LABEL_WIDTH}
            width={40}
            tooltip="The trace of one vLLM request: hexadecimal, or a template variable"
            testId={ids.traceId}
            placeholder="4bf92f3577b34da6a3ce929d0e0e4736"
            value={query.traceId}
            validate={validateTraceId}
            onCommit={(traceId) => update({ traceId })}
          />
        </InlineFieldRow>
      )}
      {queryType === 'verdict' && (
        <VerdictEditor query={query} datasource={datasource} variables={variables} update={update} />
      )}
      {queryType === 'slo' && <SLOEditor query={query} objectives={datasource.objectiveNames()} update={update} />}
    </>
  );
}

interface SubEditorProps {
  query: VllmQuery;
  update: (patch: Partial<VllmQuery>) => void;
}

interface CatalogEditorProps extends SubEditorProps {
  datasource: DataSource;
  variables: string[];
}

function SignalsEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const load = useCallback(() => datasource.listSignals(), [datasource]);
  const catalog = useResource(load);
  const known = new Map((catalog.value ?? []).map((s) => [s.name, s]));
  const options = [
    ...signalOptions(catalog.value ?? []),
    ...(variables.length ? [{ label: 'Template variables', options: variables.map(asOption) }] : []),
  ];
  const value = (query.signals ?? []).map((name) => {
    const s = known.get(name);
    return s ? { label: signalLabel(s), value: name } : asOption(name);
  });
  return (
    <>
      <InlineFieldRow>
        <InlineField label="Signals" labelWidth={LABEL_WIDTH} tooltip="Named, version-independent vLLM signals">
          <MultiSelect
            data-testid={ids.signals}
            width={64}
            allowCustomValue
            isLoading={catalog.loading}
            placeholder="Choose signals"
            options={options}
            value={value}
            onChange={(v: Array<SelectableValue<string>>) =>
              update({ signals: v.map((o) => o.value ?? '').filter(Boolean) })
            }
          />
        </InlineField>
        <ValidatedInput
          label="Top k"
          labelWidth={10}
          width={12}
          tooltip="With more instances than this, each signal's worst instances and the fleet median only; a whole number or a variable such as $topk; empty for every instance"
          testId={ids.topK}
          placeholder="all"
          value={query.topK}
          validate={validateTopK}
          onCommit={(v) => update({ topK: v.trim() === '' ? undefined : v.trim() })}
        />
      </InlineFieldRow>
      <ResourceNotice what="the signal catalog" error={catalog.error} testId={ids.resourceError} />
    </>
  );
}

function DiagnosisEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const load = useCallback(() => datasource.listRules(), [datasource]);
  const rules = useResource(load);
  const options = [
    ...(rules.value ?? []).map((r) => ({ label: r.id, value: r.id, description: r.symptom })),
    ...variables.map(asOption),
  ];
  return (
    <>
      <InlineFieldRow>
        <InlineField label="Format" labelWidth={LABEL_WIDTH}>
          <div data-testid={ids.format}>
            <RadioButtonGroup
              options={FORMAT_OPTIONS}
              value={query.format ?? DEFAULT_FORMAT}
              onChange={(format) => update({ format })}
            />
          </div>
        </InlineField>
        <InlineField label="Rules" labelWidth={LABEL_WIDTH} tooltip="Evaluate only these rules; empty for all">
          <MultiSelect
            data-testid={ids.rules}
            width={48}
            allowCustomValue
            isLoading={rules.loading}
            placeholder="All rules"
            options={options}
            value={(query.rules ?? []).map(asOption)}
            onChange={(v: Array<SelectableValue<string>>) =>
              update({ rules: v.map((o) => o.value ?? '').filter(Boolean) })
            }
          />
        </InlineField>
      </InlineFieldRow>
      {(query.format ?? DEFAULT_FORMAT) === 'findings' && (
        <InlineFieldRow>
          <InlineField
            label="Headline only"
            labelWidth={LABEL_WIDTH}
            tooltip="Only each instance's headline finding, its likely bottleneck; off to see secondary findings too"
          >
            <InlineSwitch
              data-testid={ids.headlineOnly}
              value={query.headlineOnly ?? false}
              onChange={(e) => update({ headlineOnly: e.currentTarget.checked })}
            />
          </InlineField>
          <ChoicesPicker
            label="Severities"
            tooltip="Only findings of these severities; empty for all"
            testId={ids.severities}
            width={36}
            placeholder="All severities"
            options={SEVERITY_OPTIONS}
            value={query.severities}
            onChange={(severities) => update({ severities })}
          />
          <InlineField
            label="One instance"
            labelWidth={LABEL_WIDTH}
            tooltip="Findings only when one instance is in view, as graph annotations want; with several, none and a notice"
          >
            <InlineSwitch
              data-testid={ids.oneInstance}
              value={query.oneInstance ?? false}
              onChange={(e) => update({ oneInstance: e.currentTarget.checked })}
            />
          </InlineField>
        </InlineFieldRow>
      )}
      {query.format === 'timeline' && (
        <InlineFieldRow>
          <InlineField
            label="Rule rows"
            labelWidth={LABEL_WIDTH}
            tooltip="Below each instance, a row for each rule that was pending or firing; off: one row per instance (every rule when one instance is in view)"
          >
            <InlineSwitch
              data-testid={ids.ruleRows}
              value={query.ruleRows ?? false}
              onChange={(e) => update({ ruleRows: e.currentTarget.checked })}
            />
          </InlineField>
        </InlineFieldRow>
      )}
      <ResourceNotice what="the rules" error={rules.error} testId={ids.resourceError} />
    </>
  );
}

function RequestsEditor({ query, update }: SubEditorProps) {
  return (
    <InlineFieldRow>
      <InlineField label="Anomalous only" labelWidth={LABEL_WIDTH} tooltip="Only requests with an anomaly reason">
        <InlineSwitch
          data-testid={ids.anomalousOnly}
          value={query.anomalousOnly ?? false}
          onChange={(e) => update({ anomalousOnly: e.currentTarget.checked })}
        />
      </InlineField>
      <ValidatedInput
        label="Min TTFT (s)"
        labelWidth={LABEL_WIDTH}
        width={12}
        tooltip="Only requests whose time to first token is at least this many seconds"
        testId={ids.minTtft}
        placeholder="0"
        value={query.minTtft === undefined ? '' : String(query.minTtft)}
        validate={validateNonNegative}
        onCommit={(v) => update({ minTtft: v === '' ? undefined : parseNumber(v) })}
      />
      <ValidatedInput
        label="Limit"
        labelWidth={10}
        width={12}
        testId={ids.limit}
        placeholder={String(QUERY_DEFAULTS.requests.limit)}
        value={query.limit === undefined ? '' : String(query.limit)}
        validate={validateLimit}
        onCommit={(v) => update({ limit: v === '' ? undefined : parseNumber(v) })}
      />
    </InlineFieldRow>
  );
}

function VerdictEditor({ query, datasource, variables, update }: CatalogEditorProps) {
  const load = useCallback(() => datasource.listRules(), [datasource]);
  const rules = useResource(load);
  const options = [
    ...(rules.value ?? []).map((r) => ({ label: r.id, value: r.id, description: r.symptom })),
    ...variables.map(asOption),
  ];
  return (
    <>
      <InlineFieldRow>
        <ValidatedInput
          label="Baseline from"
          labelWidth={LABEL_WIDTH}
          width={28}
          tooltip="Start of the baseline window: RFC 3339 or a relative time such as now-7d; empty: the window of the range's length just before it"
          testId={ids.baselineFrom}
          placeholder="now-7d"
          value={query.baselineFrom}
          validate={validateTime}
          onCommit={(baselineFrom) => update({ baselineFrom })}
        />
        <ValidatedInput
          label="Baseline to"
          labelWidth={LABEL_WIDTH}
          width={28}
          tooltip="End of the baseline window: RFC 3339 or a relative time such as now-6d"
          testId={ids.baselineTo}
          placeholder="now-6d"
          value={query.baselineTo}
          validate={validateTime}
          onCommit={(baselineTo) => update({ baselineTo })}
        />
      </InlineFieldRow>
      <InlineFieldRow>
        <ChoicesPicker
          label="Optimisations"
          tooltip="Optimisations in use, for when the metrics cannot tell; empty to detect them"
          testId={ids.optimisations}
          width={64}
          placeholder="Detect from the metrics"
          options={OPTIMISATION_OPTIONS}
          value={query.optimisations}
          onChange={(optimisations) => update({ optimisations })}
        />
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
  const format = (query.format ?? DEFAULT_SLO_FORMAT) as SLOFormat;
  return (
    <InlineFieldRow>
      <InlineField label="Format" labelWidth={LABEL_WIDTH}>
        <div data-testid={ids.sloFormat}>
          <RadioButtonGroup options={SLO_FORMAT_OPTIONS} value={format} onChange={(f) => update({ format: f })} />
        </div>
      </InlineField>
      <InlineField label="Objectives" labelWidth={LABEL_WIDTH} tooltip="Only these objectives; empty for all">
        <MultiSelect
          data-testid={ids.slos}
          width={48}
          allowCustomValue
          placeholder="All objectives"
          options={objectives.map(asOption)}
          value={(query.slos ?? []).map(asOption)}
          onChange={(v: Array<SelectableValue<string>>) =>
            update({ slos: v.map((o) => o.value ?? '').filter(Boolean) })
          }
        />
      </InlineField>
    </InlineFieldRow>
  );
}
