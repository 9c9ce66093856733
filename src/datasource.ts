import {
  escapeRegex,
  type CoreApp,
  type DataSourceInstanceSettings,
  type MetricFindValue,
  type ScopedVars,
  type TimeRange,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv, type TemplateSrv } from '@grafana/runtime';

import {
  DEFAULT_ANNOTATION_QUERY,
  DEFAULT_QUERY,
  type LabelVariableKind,
  type RuleInfo,
  type SignalInfo,
  type VllmDataSourceOptions,
  type VllmQuery,
  type VllmVariableQuery,
} from './types';
import { VllmVariableSupport } from './variables';

/**
 * Formats the value of a template variable used in the instance or model field: one value as an
 * escaped literal, several as an alternation that the backend's regex matcher accepts.
 */
export function regexFormatter(value: string | string[]): string {
  if (!Array.isArray(value)) {
    return escapeRegex(value);
  }
  if (value.length === 1) {
    return escapeRegex(value[0]);
  }
  return `(${value.map(escapeRegex).join('|')})`;
}

/**
 * The window of a label-value search, as the resource routes read it (unix milliseconds, as Grafana
 * passes a time range); without a range the backend searches the last day.
 */
export function rangeParams(from: number | undefined, to: number | undefined): Record<string, string> {
  return from === undefined || to === undefined ? {} : { from: String(from), to: String(to) };
}

function splitList(
  values: string[] | undefined,
  templateSrv: TemplateSrv,
  scopedVars: ScopedVars
): string[] | undefined {
  if (!values) {
    return undefined;
  }
  return values
    .flatMap((v) => templateSrv.replace(v, scopedVars, 'csv').split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** A variable query that a label-value route answers. */
export type LabelVariableQuery = Omit<VllmVariableQuery, 'refId' | 'kind'> & { kind: LabelVariableKind };

export class DataSource extends DataSourceWithBackend<VllmQuery, VllmDataSourceOptions> {
  constructor(
    private readonly settings: DataSourceInstanceSettings<VllmDataSourceOptions>,
    private readonly templateSrv: TemplateSrv = getTemplateSrv()
  ) {
    super(settings);
    this.annotations = {
      getDefaultQuery: () => DEFAULT_ANNOTATION_QUERY,
    };
    this.variables = new VllmVariableSupport(this);
  }

  /** The trace data source of the settings (tracesDatasourceUid) as a variable's one value; none when unset. */
  traceDatasourceChoices(): MetricFindValue[] {
    const uid = this.settings.jsonData.tracesDatasourceUid;
    return uid ? [{ text: uid, value: uid }] : [];
  }

  /** The names of the service-level objectives of the data source's settings. */
  objectiveNames(): string[] {
    return (this.settings.jsonData.slos ?? []).map((o) => o.name);
  }

  getDefaultQuery(_app: CoreApp): Partial<VllmQuery> {
    return DEFAULT_QUERY;
  }

  /**
   * Leaves out only hidden queries. An explain without a trace id is sent: the backend answers it
   * with what to do (click a request), where a query left out would show only "No data".
   */
  filterQuery(query: VllmQuery): boolean {
    return !query.hide;
  }

  applyTemplateVariables(query: VllmQuery, scopedVars: ScopedVars): VllmQuery {
    const t = this.templateSrv;
    const plain = (v: string | undefined) => (v === undefined ? undefined : t.replace(v, scopedVars));
    const regex = (v: string | undefined) => (v === undefined ? undefined : t.replace(v, scopedVars, regexFormatter));
    return {
      ...query,
      instance: regex(query.instance),
      model: regex(query.model),
      traceId: plain(query.traceId),
      baselineFrom: plain(query.baselineFrom),
      baselineTo: plain(query.baselineTo),
      rule: plain(query.rule),
      topK: plain(query.topK),
      expr: plain(query.expr),
      signals: splitList(query.signals, t, scopedVars),
      rules: splitList(query.rules, t, scopedVars),
      slos: splitList(query.slos, t, scopedVars),
    };
  }

  /** The dashboard's template variables as `$name`, offered beside the values in the pickers. */
  variableNames(): string[] {
    return this.templateSrv.getVariables().map((v) => `$${v.name}`);
  }

  /** Values for template variables, from the backend's label-value routes. */
  async metricFindQuery(
    q: LabelVariableQuery,
    options?: { scopedVars?: ScopedVars; range?: TimeRange }
  ): Promise<MetricFindValue[]> {
    const scopedVars = options?.scopedVars ?? {};
    const params: Record<string, string> = {};
    const filter = q.kind === 'instances' ? q.model : q.instance;
    if (filter) {
      params[q.kind === 'instances' ? 'model' : 'instance'] = this.templateSrv.replace(
        filter,
        scopedVars,
        regexFormatter
      );
    }
    const values = await this.listValues(q.kind, {
      ...params,
      ...rangeParams(options?.range?.from.valueOf(), options?.range?.to.valueOf()),
    });
    return values.map((text) => ({ text, value: text }));
  }

  /** Label values of the instances or models; `params` are the route's filters and its window (rangeParams). */
  listValues(kind: LabelVariableKind, params: Record<string, string> = {}): Promise<string[]> {
    return this.getResource<string[]>(kind, params).then((v) => v ?? []);
  }

  listSignals(): Promise<SignalInfo[]> {
    return this.getResource<SignalInfo[]>('signals').then((v) => v ?? []);
  }

  listRules(): Promise<RuleInfo[]> {
    return this.getResource<RuleInfo[]>('rules').then((v) => v ?? []);
  }
}
