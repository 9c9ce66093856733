import type { DataSourceJsonData } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';

/**
 * The query model. It is persisted in dashboards and alert rules, so the names are a contract
 * shared with the Go backend (pkg/plugin): fields may be added, never renamed.
 */
export type QueryType = 'signals' | 'diagnosis' | 'requests' | 'explain' | 'verdict';

export type DiagnosisFormat = 'findings' | 'timeline' | 'alert' | 'fleet';

export type Severity = 'critical' | 'warning' | 'info';

export const SEVERITIES: Severity[] = ['critical', 'warning', 'info'];

export type Optimisation = 'chunked_prefill' | 'prefix_caching' | 'spec_decode' | 'fp8_kv_cache' | 'concurrency';

export const OPTIMISATIONS: Optimisation[] = [
  'chunked_prefill',
  'prefix_caching',
  'spec_decode',
  'fp8_kv_cache',
  'concurrency',
];

export interface VllmQuery extends DataQuery {
  queryType?: QueryType;
  /** Exact value, regular expression or template variable; empty means every instance. */
  instance?: string;
  /** Exact value, regular expression or template variable; empty means every model. */
  model?: string;
  signals?: string[];
  format?: DiagnosisFormat;
  /** Rule ids; empty means every rule. */
  rules?: string[];
  /** Findings format: only each instance's headline finding (as the dashboards' annotations). */
  headlineOnly?: boolean;
  /** Findings format: only findings of these severities; empty means all. */
  severities?: Severity[];
  anomalousOnly?: boolean;
  /** Seconds. */
  minTtft?: number;
  limit?: number;
  traceId?: string;
  /** RFC 3339 or Grafana relative time such as now-7d. */
  baselineFrom?: string;
  baselineTo?: string;
  /** Optimisations the user states are in use, for when the metrics cannot tell. */
  optimisations?: Optimisation[];
  /** One-line text form sent by trace-to-metrics links: `explain <traceId>`, `signals a,b`, `diagnosis`. */
  expr?: string;
}

export const DEFAULT_SIGNALS = ['ttft_p50', 'ttft_p99', 'kv_usage'];
export const DEFAULT_LIMIT = 100;

export const DEFAULT_QUERY: Partial<VllmQuery> = {
  queryType: 'signals',
  signals: DEFAULT_SIGNALS,
};

/** A new annotation draws each instance's headline finding; secondary ones on request (headlineOnly off). */
export const DEFAULT_ANNOTATION_QUERY: Partial<VllmQuery> = {
  queryType: 'diagnosis',
  format: 'findings',
  headlineOnly: true,
};

export type TracesBackend = 'tempo' | 'jaeger' | 'none';

/** Rule id → parameter name → value, overriding the rule's default threshold. */
export type Thresholds = Record<string, Record<string, number>>;

export interface VllmDataSourceOptions extends DataSourceJsonData {
  tracesBackend?: TracesBackend;
  tracesUrl?: string;
  tracesBasicAuthUser?: string;
  tracesDatasourceUid?: string;
  scrapeInterval?: string;
  labelMatchers?: string;
  instanceLabel?: string;
  modelLabel?: string;
  serviceName?: string;
  spanName?: string;
  spanInstanceAttribute?: string;
  spanModelAttribute?: string;
  thresholds?: Thresholds;
}

/**
 * The backend's defaults of the settings the config editor shows as placeholders. They are the
 * backend's own (pkg/plugin/settings.go): types.test.ts checks them against
 * pkg/plugin/testdata/settings_defaults.json, which `go generate ./pkg/plugin` writes from the
 * Go defaults and a Go test checks is not stale.
 */
export const SETTINGS_DEFAULTS: Readonly<Record<string, string>> = {
  scrapeInterval: '15s',
  instanceLabel: 'instance',
  modelLabel: 'model_name',
  serviceName: 'vllm',
  spanName: 'llm_request',
  spanInstanceAttribute: 'service.instance.id',
  spanModelAttribute: 'gen_ai.response.model',
};

export interface VllmSecureJsonData {
  basicAuthPassword?: string;
  httpHeaderValue1?: string;
  tracesBasicAuthPassword?: string;
  tracesBearerToken?: string;
}

/** A template variable query: the instances or the models, optionally narrowed by the other. */
export interface VllmVariableQuery extends DataQuery {
  kind: 'instances' | 'models';
  instance?: string;
  model?: string;
}

/** An entry of the backend's `signals` resource route. */
export interface SignalInfo {
  name: string;
  label: string;
  unit: string;
  group: string;
  description: string;
}

export interface RuleThreshold {
  name: string;
  value: number;
  default: number;
  unit: string;
  description: string;
}

/** An entry of the backend's `rules` resource route. */
export interface RuleInfo {
  id: string;
  symptom: string;
  severity: string;
  for: string;
  cause: string;
  action: string;
  evidence: string[];
  thresholds: RuleThreshold[];
}
