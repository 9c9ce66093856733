import type { DataSourceJsonData } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';

import {
  QUERY_DEFAULTS,
  type QueryModel,
  type QueryType,
  type SecureJsonDataKey,
  type SettingsJsonData,
} from './types.gen';

// The query model and the settings are pkg/plugin's: `go generate ./pkg/plugin` writes them into
// types.gen.ts from the Go declarations, and a Go test fails while that file is stale.
export * from './types.gen';

/** A query as Grafana stores it in dashboards and alert rules: the names are a contract. */
export interface VllmQuery extends DataQuery, Omit<QueryModel, 'queryType'> {
  queryType?: QueryType;
}

/** A new query: a signals query of the default signals. */
export const DEFAULT_QUERY: Partial<VllmQuery> = {
  queryType: 'signals',
  ...QUERY_DEFAULTS.signals,
};

/** A new annotation draws each instance's headline finding; secondary ones on request (headlineOnly off). */
export const DEFAULT_ANNOTATION_QUERY: Partial<VllmQuery> = {
  queryType: 'diagnosis',
  format: 'findings',
  headlineOnly: true,
};

/** The data source's jsonData: the plugin's settings beside Grafana's. */
export interface VllmDataSourceOptions extends DataSourceJsonData, SettingsJsonData {}

/** Grafana's secure HTTP settings and the plugin's own. */
export interface VllmSecureJsonData extends Partial<Record<SecureJsonDataKey, string>> {
  basicAuthPassword?: string;
  httpHeaderValue1?: string;
}

/** A new template variable lists the instances. */
export const DEFAULT_VARIABLE_QUERY: Pick<VllmVariableQuery, 'refId' | 'kind'> = {
  refId: 'VllmVariableQuery',
  kind: 'instances',
};

/** The variable kinds answered by a label-value route of the backend. */
export type LabelVariableKind = 'instances' | 'models';

/**
 * A template variable query: the instances or the models, optionally narrowed by the other; the
 * trace ids of the anomalous requests of the instances and models given, the most anomalous first;
 * or the uid of the trace data source of the data source's settings (tracesDatasourceUid).
 */
export interface VllmVariableQuery extends DataQuery {
  kind: LabelVariableKind | 'anomalousRequests' | 'traceDatasource';
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
