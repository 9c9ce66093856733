import { css } from '@emotion/css';
import { type DataSourcePluginOptionsEditorProps, type GrafanaTheme2, type SelectableValue } from '@grafana/data';
import { DataSourcePicker, getBackendSrv } from '@grafana/runtime';
import {
  DataSourceHttpSettings,
  InlineField,
  InlineFieldRow,
  RadioButtonGroup,
  SecretInput,
  Text,
  useStyles2,
} from '@grafana/ui';
import { useCallback } from 'react';

import { selectors } from '../selectors';
import {
  SETTINGS_DEFAULTS,
  type RuleInfo,
  type Thresholds,
  type TracesBackend,
  type VllmDataSourceOptions,
  type VllmSecureJsonData,
} from '../types';
import { parseNumber, validateDuration, validateHttpUrl } from '../validation';
import { ResourceNotice } from './ResourceNotice';
import { useResource } from './useResource';
import { ValidatedInput } from './ValidatedInput';

type Props = DataSourcePluginOptionsEditorProps<VllmDataSourceOptions, VllmSecureJsonData>;

type StringSetting = {
  [K in keyof VllmDataSourceOptions]-?: VllmDataSourceOptions[K] extends string | undefined ? K : never;
}[keyof VllmDataSourceOptions];

type SecretSetting = 'tracesBasicAuthPassword' | 'tracesBearerToken';

const LABEL_WIDTH = 26;
const ids = selectors.configEditor;

const BACKEND_OPTIONS: Array<SelectableValue<TracesBackend>> = [
  { label: 'Tempo', value: 'tempo' },
  { label: 'Jaeger', value: 'jaeger' },
  { label: 'None', value: 'none' },
];

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
  const styles = useStyles2(getStyles);
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

  const setSecret = (key: SecretSetting, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: value } });

  const resetSecret = (key: SecretSetting) =>
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
        placeholder={placeholder ?? (SETTINGS_DEFAULTS as Record<string, string | undefined>)[key]}
        value={jsonData[key]}
        validate={validate}
        onCommit={(v) => setJson(key, v)}
      />
    </InlineFieldRow>
  );

  const secret = (key: SecretSetting, label: string, testId: string) => (
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

  const tracesBackend = jsonData.tracesBackend ?? 'none';

  return (
    <>
      <DataSourceHttpSettings
        defaultUrl="http://localhost:9090"
        dataSourceConfig={options}
        onChange={onOptionsChange}
        showAccessOptions={false}
      />

      <div className={styles.heading}>
        <Text element="h3">vLLM metrics</Text>
      </div>
      {text(
        'scrapeInterval',
        'Scrape interval',
        ids.scrapeInterval,
        validateDuration,
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

      <div className={styles.heading}>
        <Text element="h3">Traces</Text>
      </div>
      <InlineFieldRow>
        <InlineField label="Trace backend" labelWidth={LABEL_WIDTH}>
          <div data-testid={ids.tracesBackend}>
            <RadioButtonGroup
              options={BACKEND_OPTIONS}
              value={tracesBackend}
              onChange={(v) => setJson('tracesBackend', v)}
            />
          </div>
        </InlineField>
      </InlineFieldRow>
      {tracesBackend !== 'none' && (
        <>
          {text(
            'tracesUrl',
            'Traces URL',
            ids.tracesUrl,
            validateHttpUrl,
            'The query API of Tempo (port 3200) or Jaeger (port 16686)',
            tracesBackend === 'tempo' ? 'http://tempo:3200' : 'http://jaeger:16686'
          )}
          {text('tracesBasicAuthUser', 'Basic auth user', ids.tracesBasicAuthUser)}
          {secret('tracesBasicAuthPassword', 'Basic auth password', ids.tracesBasicAuthPassword)}
          {secret('tracesBearerToken', 'Bearer token', ids.tracesBearerToken)}
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
                  type={['tempo', 'jaeger']}
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
        </>
      )}

      <div className={styles.heading}>
        <Text element="h3">Rule thresholds</Text>
      </div>
      <ThresholdsTable
        uid={options.uid}
        thresholds={jsonData.thresholds ?? {}}
        onChange={(t) => setJson('thresholds', t)}
      />
    </>
  );
}

interface ThresholdRow {
  rule: string;
  name: string;
  defaultValue?: number;
  unit: string;
  description: string;
}

/** One row per rule parameter from the backend, plus any saved override the backend did not list. */
function thresholdRows(rules: RuleInfo[], thresholds: Thresholds): ThresholdRow[] {
  const rows: ThresholdRow[] = rules.flatMap((r) =>
    (r.thresholds ?? []).map((t) => ({
      rule: r.id,
      name: t.name,
      defaultValue: t.default,
      unit: t.unit,
      description: t.description,
    }))
  );
  const listed = new Set(rows.map((r) => `${r.rule}\u0000${r.name}`));
  for (const [rule, params] of Object.entries(thresholds)) {
    for (const name of Object.keys(params)) {
      if (!listed.has(`${rule}\u0000${name}`)) {
        rows.push({ rule, name, unit: '', description: 'not a parameter the backend lists' });
      }
    }
  }
  return rows;
}

function validateThreshold(v: string): string | undefined {
  return v === '' || parseNumber(v) !== undefined ? undefined : 'Enter a number, or leave empty for the default';
}

interface ThresholdsTableProps {
  uid: string;
  thresholds: Thresholds;
  onChange: (thresholds: Thresholds | undefined) => void;
}

function ThresholdsTable({ uid, thresholds, onChange }: ThresholdsTableProps) {
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

  const rows = thresholdRows(rules.value ?? [], thresholds);
  return (
    <>
      <ResourceNotice what="the rules" error={rules.error} testId={ids.rulesError} />
      <table className={styles.table} data-testid={ids.thresholds}>
        <thead>
          <tr>
            <th>Rule</th>
            <th>Parameter</th>
            <th>Default</th>
            <th>Override</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const override = thresholds[r.rule]?.[r.name];
            return (
              <tr key={`${r.rule}.${r.name}`} title={r.description}>
                <td>{r.rule}</td>
                <td>{r.name}</td>
                <td>{r.defaultValue === undefined ? '—' : `${r.defaultValue}${r.unit ? ` ${r.unit}` : ''}`}</td>
                <td>
                  <ValidatedInput
                    width={16}
                    testId={ids.threshold(r.rule, r.name)}
                    placeholder={r.defaultValue === undefined ? '' : String(r.defaultValue)}
                    value={override === undefined ? '' : String(override)}
                    validate={validateThreshold}
                    onCommit={(v) => setOverride(r.rule, r.name, v)}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  heading: css({
    marginTop: theme.spacing(3),
    marginBottom: theme.spacing(1),
  }),
  table: css({
    borderCollapse: 'collapse',
    marginBottom: theme.spacing(2),
    'th, td': {
      padding: theme.spacing(0.5, 1),
      textAlign: 'left',
      verticalAlign: 'top',
    },
  }),
});
