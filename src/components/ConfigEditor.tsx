import { css } from '@emotion/css';
import { type DataSourcePluginOptionsEditorProps, type GrafanaTheme2, type SelectableValue } from '@grafana/data';
import {
  AdvancedHttpSettings,
  Auth,
  ConfigSection,
  ConfigSubSection,
  ConnectionSettings,
  convertLegacyAuthProps,
  DataSourceDescription,
} from '@grafana/plugin-ui';
import { DataSourcePicker, getBackendSrv } from '@grafana/runtime';
import {
  Divider,
  FieldValidationMessage,
  InlineField,
  InlineFieldRow,
  RadioButtonGroup,
  SecretInput,
  TextLink,
  useStyles2,
} from '@grafana/ui';
import { useCallback } from 'react';

import { selectors } from '../selectors';
import {
  SETTINGS_DEFAULTS,
  TRACES_BACKENDS,
  type RuleInfo,
  type SecureJsonDataKey,
  type SettingsJsonData,
  type Thresholds,
  type TracesBackend,
  type VllmDataSourceOptions,
  type VllmSecureJsonData,
} from '../types';
import { parseNumber, validateScrapeInterval, validateHttpUrl } from '../validation';
import { ResourceNotice } from './ResourceNotice';
import { SLOEditor } from './SLOEditor';
import { useResource } from './useResource';
import { ValidatedInput } from './ValidatedInput';

type Props = DataSourcePluginOptionsEditorProps<VllmDataSourceOptions, VllmSecureJsonData>;

type StringSetting = {
  [K in keyof SettingsJsonData]-?: SettingsJsonData[K] extends string | undefined ? K : never;
}[keyof SettingsJsonData];

const LABEL_WIDTH = 26;
const ids = selectors.configEditor;

/** The README's sections that explain each part of this page. */
const README = 'https://github.com/seed/vllm-datasource/blob/main/README.md';
export const DOCS = {
  settings: `${README}#settings`,
  matrix: `${README}#the-diagnosis-matrix`,
  queries: `${README}#queries`,
} as const;

function DocsLink({ href, children }: { href: string; children: string }) {
  return (
    <TextLink href={href} external inline>
      {children}
    </TextLink>
  );
}

interface BackendView {
  label: string;
  /** The example of its URL; none for no trace backend. */
  url?: string;
  /** The type of Grafana's own data source for it, which the trace links open. */
  datasource?: string;
}

/** How the page shows each trace backend; one the backend adds fails the typecheck until it has one. */
const BACKENDS: Record<TracesBackend, BackendView> = {
  none: { label: 'None' },
  tempo: { label: 'Tempo', url: 'http://tempo:3200', datasource: 'tempo' },
  jaeger: { label: 'Jaeger', url: 'http://jaeger:16686', datasource: 'jaeger' },
};

const TRACE_DATASOURCE_TYPES = TRACES_BACKENDS.flatMap((b) => BACKENDS[b].datasource ?? []);

const BACKEND_OPTIONS: Array<SelectableValue<TracesBackend>> = TRACES_BACKENDS.map((value) => ({
  label: BACKENDS[value].label,
  value,
}));

function isTracesBackend(v: string): v is TracesBackend {
  return (TRACES_BACKENDS as readonly string[]).includes(v);
}

/** The settings' trace backend, or the message that says its saved value is none the backend reads. */
function tracesBackendOf(v: string | undefined): { backend?: TracesBackend; error?: string } {
  const value = v ?? SETTINGS_DEFAULTS.tracesBackend;
  if (value !== undefined && isTracesBackend(value)) {
    return { backend: value };
  }
  const known = TRACES_BACKENDS.map((b) => BACKENDS[b].label).join(', ');
  return { error: `"${value}" is not a trace backend this data source reads: choose one of ${known}` };
}

const LABEL_NAME = /^[A-Za-z_]\w*$/;

function validateLabelName(v: string): string | undefined {
  return v === '' || LABEL_NAME.test(v)
    ? undefined
    : 'A Prometheus label name: letters, digits and _, not starting with a digit';
}

function validateMatchers(v: string): string | undefined {
  return v === '' || /^\{[\s\S]*\}$/.test(v)
    ? undefined
    : 'Write PromQL label matchers in braces, such as {job="vllm"}';
}

function noCheck(): undefined {
  return undefined;
}

/** The rule catalog served by this data source's backend, for the thresholds table. */
function fetchRules(uid: string): Promise<RuleInfo[]> {
  return getBackendSrv()
    .get<RuleInfo[]>(`api/datasources/uid/${encodeURIComponent(uid)}/resources/rules`)
    .then((v) => v ?? []);
}

export function ConfigEditor({ options, onOptionsChange }: Props) {
  const jsonData = options.jsonData;
  const secureJsonFields = options.secureJsonFields ?? {};
  const secureJsonData = options.secureJsonData ?? {};

  const setJson = <K extends keyof VllmDataSourceOptions>(key: K, value: VllmDataSourceOptions[K]) => {
    const next = { ...jsonData };
    if (value === undefined || value === '') {
      delete next[key];
    } else {
      next[key] = value;
    }
    onOptionsChange({ ...options, jsonData: next });
  };

  const setSecret = (key: SecureJsonDataKey, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: value } });

  const resetSecret = (key: SecureJsonDataKey) =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...secureJsonFields, [key]: false },
      secureJsonData: { ...secureJsonData, [key]: '' },
    });

  const text = (
    key: StringSetting,
    label: string,
    testId: string,
    validate: (v: string) => string | undefined = noCheck,
    tooltip?: string,
    placeholder?: string
  ) => (
    <InlineFieldRow>
      <ValidatedInput
        label={label}
        labelWidth={LABEL_WIDTH}
        width={40}
        tooltip={tooltip}
        testId={testId}
        placeholder={placeholder ?? SETTINGS_DEFAULTS[key]}
        value={jsonData[key]}
        validate={validate}
        onCommit={(v) => setJson(key, v)}
      />
    </InlineFieldRow>
  );

  const secret = (key: SecureJsonDataKey, label: string, testId: string) => (
    <InlineFieldRow>
      <InlineField label={label} labelWidth={LABEL_WIDTH}>
        <SecretInput
          data-testid={testId}
          width={40}
          isConfigured={secureJsonFields[key] ?? false}
          value={secureJsonData[key] ?? ''}
          onChange={(e) => setSecret(key, e.currentTarget.value)}
          onReset={() => resetSecret(key)}
        />
      </InlineField>
    </InlineFieldRow>
  );

  const traces = tracesBackendOf(jsonData.tracesBackend);
  const backendView = traces.backend && BACKENDS[traces.backend];

  return (
    <>
      <DataSourceDescription dataSourceName="vLLM Diagnosis" docsLink={DOCS.settings} hasRequiredFields />
      <Divider />
      <ConnectionSettings
        config={options}
        onChange={onOptionsChange}
        urlLabel="Prometheus URL"
        urlPlaceholder="http://localhost:9090"
        urlTooltip="Prometheus, Thanos, Mimir, VictoriaMetrics: anything with the Prometheus HTTP API that scrapes vLLM"
      />
      <Divider />
      <Auth {...convertLegacyAuthProps({ config: options, onChange: onOptionsChange })} />
      <Divider />
      <ConfigSection
        title="Additional settings"
        description="Timeout and cookies of the Prometheus connection."
        isCollapsible
        isInitiallyOpen={false}
      >
        <AdvancedHttpSettings config={options} onChange={onOptionsChange} />
      </ConfigSection>
      <Divider />

      <ConfigSection
        title="vLLM metrics"
        description={
          <>
            Which series are vLLM&apos;s and how they are labelled. <DocsLink href={DOCS.settings}>Settings</DocsLink>
          </>
        }
      >
        {text(
          'scrapeInterval',
          'Scrape interval',
          ids.scrapeInterval,
          validateScrapeInterval,
          'The Prometheus scrape interval of the vLLM targets; windows are at least 4 times it'
        )}
        {text(
          'labelMatchers',
          'Label matchers',
          ids.labelMatchers,
          validateMatchers,
          'Extra PromQL matchers for every vLLM series',
          '{job="vllm"}'
        )}
        {text('instanceLabel', 'Instance label', ids.instanceLabel, validateLabelName)}
        {text('modelLabel', 'Model label', ids.modelLabel, validateLabelName)}
      </ConfigSection>
      <Divider />

      <ConfigSection
        title="Traces"
        description={
          <>
            The Tempo or Jaeger that holds vLLM&apos;s request spans, for the requests and explain queries.{' '}
            <DocsLink href={DOCS.queries}>Queries</DocsLink>
          </>
        }
      >
        <InlineFieldRow>
          <InlineField label="Trace backend" labelWidth={LABEL_WIDTH}>
            <div data-testid={ids.tracesBackend}>
              <RadioButtonGroup
                options={BACKEND_OPTIONS}
                value={traces.backend}
                onChange={(v) => setJson('tracesBackend', v)}
              />
            </div>
          </InlineField>
          {traces.error && <FieldValidationMessage horizontal>{traces.error}</FieldValidationMessage>}
        </InlineFieldRow>
        {backendView?.url && (
          <>
            {text(
              'tracesUrl',
              'Traces URL',
              ids.tracesUrl,
              validateHttpUrl,
              'The query API of Tempo (port 3200) or Jaeger (port 16686)',
              backendView.url
            )}
            <ConfigSubSection title="Trace backend auth">
              {text('tracesBasicAuthUser', 'Basic auth user', ids.tracesBasicAuthUser)}
              {secret('tracesBasicAuthPassword', 'Basic auth password', ids.tracesBasicAuthPassword)}
              {secret('tracesBearerToken', 'Bearer token', ids.tracesBearerToken)}
            </ConfigSubSection>
            <ConfigSubSection title="Spans">
              <InlineFieldRow>
                <InlineField
                  label="Trace data source"
                  labelWidth={LABEL_WIDTH}
                  tooltip="Grafana's own Tempo or Jaeger data source, for the trace links"
                >
                  <div data-testid={ids.tracesDatasource}>
                    <DataSourcePicker
                      width={40}
                      noDefault
                      tracing
                      type={TRACE_DATASOURCE_TYPES}
                      current={jsonData.tracesDatasourceUid ?? null}
                      onChange={(ds) => setJson('tracesDatasourceUid', ds.uid)}
                      onClear={() => setJson('tracesDatasourceUid', undefined)}
                    />
                  </div>
                </InlineField>
              </InlineFieldRow>
              {text('serviceName', 'Service name', ids.serviceName, noCheck, 'The service.name of vLLM spans')}
              {text('spanName', 'Span name', ids.spanName, noCheck, 'The name of the span of one vLLM request')}
              {text(
                'spanInstanceAttribute',
                'Span instance attribute',
                ids.spanInstanceAttribute,
                noCheck,
                'The span or resource attribute whose value equals the Prometheus instance label'
              )}
              {text(
                'spanModelAttribute',
                'Span model attribute',
                ids.spanModelAttribute,
                noCheck,
                'The span attribute that names the model'
              )}
            </ConfigSubSection>
          </>
        )}
      </ConfigSection>
      <Divider />

      <ConfigSection
        title="Rule thresholds"
        description={
          <>
            Override a rule&apos;s defaults; leave a field empty to keep its default. Each rule is folded until opened,
            and opens by itself when it has an override. <DocsLink href={DOCS.matrix}>The diagnosis matrix</DocsLink>
          </>
        }
      >
        <ThresholdGroups
          uid={options.uid}
          thresholds={jsonData.thresholds ?? {}}
          onChange={(t) => setJson('thresholds', t)}
        />
      </ConfigSection>
      <Divider />

      <ConfigSection
        title="Service-level objectives"
        description={
          <>
            What the slo queries measure: the share of requests within a latency threshold, or finished without abort or
            error, over an error budget&apos;s window. <DocsLink href={DOCS.settings}>Settings</DocsLink>
          </>
        }
      >
        <SLOEditor slos={jsonData.slos} onChange={(slos) => setJson('slos', slos)} />
      </ConfigSection>
    </>
  );
}

interface ThresholdParam {
  name: string;
  defaultValue?: number;
  unit: string;
  description: string;
}

interface ThresholdGroup {
  rule: string;
  symptom: string;
  params: ThresholdParam[];
}

/** One group per rule from the backend, plus any saved override of a rule or parameter it did not list. */
function thresholdGroups(rules: RuleInfo[], thresholds: Thresholds): ThresholdGroup[] {
  const groups: ThresholdGroup[] = rules.map((r) => ({
    rule: r.id,
    symptom: r.symptom,
    params: (r.thresholds ?? []).map((t) => ({
      name: t.name,
      defaultValue: t.default,
      unit: t.unit,
      description: t.description,
    })),
  }));
  for (const [rule, params] of Object.entries(thresholds)) {
    let group = groups.find((g) => g.rule === rule);
    if (!group) {
      group = { rule, symptom: 'not a rule the backend lists', params: [] };
      groups.push(group);
    }
    for (const name of Object.keys(params)) {
      if (!group.params.some((p) => p.name === name)) {
        group.params.push({ name, unit: '', description: 'not a parameter the backend lists' });
      }
    }
  }
  return groups;
}

function validateThreshold(v: string): string | undefined {
  return v === '' || parseNumber(v) !== undefined ? undefined : 'Enter a number, or leave empty for the default';
}

function defaultText(p: ThresholdParam): string {
  if (p.defaultValue === undefined) {
    return 'no default';
  }
  return `default ${p.defaultValue}${p.unit ? ` ${p.unit}` : ''}`;
}

interface ThresholdGroupsProps {
  uid: string;
  thresholds: Thresholds;
  onChange: (thresholds: Thresholds | undefined) => void;
}

function ThresholdGroups({ uid, thresholds, onChange }: ThresholdGroupsProps) {
  const styles = useStyles2(getStyles);
  const load = useCallback(() => fetchRules(uid), [uid]);
  const rules = useResource(load);

  const setOverride = (rule: string, name: string, text: string) => {
    const params = { ...thresholds[rule] };
    const n = parseNumber(text);
    if (n === undefined) {
      delete params[name];
    } else {
      params[name] = n;
    }
    const next = { ...thresholds, [rule]: params };
    if (Object.keys(params).length === 0) {
      delete next[rule];
    }
    onChange(Object.keys(next).length ? next : undefined);
  };

  const groups = thresholdGroups(rules.value ?? [], thresholds);
  return (
    <div data-testid={ids.thresholds}>
      <ResourceNotice what="the rules" error={rules.error} testId={ids.rulesError} />
      {groups.map((g) => {
        const overrides = Object.keys(thresholds[g.rule] ?? {}).length;
        return (
          <div key={g.rule} data-testid={ids.thresholdGroup(g.rule)}>
            <ConfigSubSection
              title={overrides ? `${g.rule} (${overrides} overridden)` : g.rule}
              description={g.symptom}
              isCollapsible
              isInitiallyOpen={overrides > 0}
            >
              {g.params.map((p) => {
                const override = thresholds[g.rule]?.[p.name];
                return (
                  <InlineFieldRow key={p.name}>
                    <ValidatedInput
                      label={p.name}
                      labelWidth={LABEL_WIDTH}
                      width={16}
                      tooltip={p.description}
                      testId={ids.threshold(g.rule, p.name)}
                      placeholder={p.defaultValue === undefined ? '' : String(p.defaultValue)}
                      value={override === undefined ? '' : String(override)}
                      validate={validateThreshold}
                      onCommit={(v) => setOverride(g.rule, p.name, v)}
                    />
                    <span className={styles.unit}>{defaultText(p)}</span>
                  </InlineFieldRow>
                );
              })}
            </ConfigSubSection>
          </div>
        );
      })}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  unit: css({
    alignSelf: 'center',
    marginLeft: theme.spacing(1),
    color: theme.colors.text.secondary,
  }),
});
