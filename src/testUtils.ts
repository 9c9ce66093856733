import { type DataSourceInstanceSettings, type TypedVariableModel } from '@grafana/data';
import { type TemplateSrv } from '@grafana/runtime';

import { DataSource } from './datasource';
import { type RuleInfo, type SignalInfo, type VllmDataSourceOptions } from './types';

type Value = string | string[];

/**
 * A template service over fixed variables that interpolates like Grafana's for the forms this
 * plugin uses: $name and ${name}, a formatter function, 'csv', and otherwise comma-joined values.
 */
export function fakeTemplateSrv(vars: Record<string, Value> = {}): TemplateSrv {
  return {
    getVariables: () => Object.keys(vars).map((name) => ({ name }) as TypedVariableModel),
    replace: (target = '', _scopedVars, format) =>
      target.replace(/\$\{(\w+)\}|\$(\w+)/g, (match, braced?: string, bare?: string) => {
        const value = vars[braced ?? bare ?? ''];
        if (value === undefined) {
          return match;
        }
        if (typeof format === 'function') {
          return format(value);
        }
        return Array.isArray(value) ? value.join(',') : value;
      }),
    containsTemplate: (target = '') => /\$\w|\$\{/.test(target),
    updateTimeRange: () => {},
  };
}

export const instanceSettings = {
  id: 1,
  uid: 'vllm-uid',
  type: 'seed-vllm-datasource',
  name: 'vLLM',
  meta: { id: 'seed-vllm-datasource' },
  access: 'proxy',
  readOnly: false,
  jsonData: {},
} as unknown as DataSourceInstanceSettings<VllmDataSourceOptions>;

export const SIGNALS: SignalInfo[] = [
  { name: 'ttft_p50', label: 'TTFT p50', unit: 's', group: 'Latency', description: 'median time to first token' },
  {
    name: 'ttft_p99',
    label: 'TTFT p99',
    unit: 's',
    group: 'Latency',
    description: '99th percentile time to first token',
  },
  {
    name: 'kv_usage',
    label: 'KV cache usage',
    unit: 'percentunit',
    group: 'Capacity',
    description: 'fraction of KV blocks in use',
  },
];

export const RULES: RuleInfo[] = [
  {
    id: 'kv_cache_saturated',
    symptom: 'KV cache full, requests preempted',
    severity: 'critical',
    for: '3m',
    cause: 'the KV cache is full',
    action: 'lower --max-num-seqs',
    evidence: ['kv_usage', 'preemption_rate'],
    thresholds: [
      { name: 'kv_usage', value: 0.85, default: 0.85, unit: 'ratio', description: 'KV usage above' },
      { name: 'preemption_rate', value: 0.5, default: 0.5, unit: '/s', description: 'preemptions per second above' },
    ],
  },
  {
    id: 'prefill_blocking',
    symptom: 'TTFT p99 far above p50',
    severity: 'warning',
    for: '5m',
    cause: 'long prefills block other requests',
    action: 'enable chunked prefill',
    evidence: ['ttft_p50', 'ttft_p99'],
    thresholds: [{ name: 'ratio', value: 2, default: 2, unit: '', description: 'p99/p50 above' }],
  },
];

export type Routes = Partial<Record<string, unknown>>;

/**
 * A data source whose resource calls answer from `routes` (a value, or an Error to fail with),
 * standing in for the Go backend's resource routes.
 */
export function dataSourceWith(
  routes: Routes,
  vars: Record<string, Value> = {},
  jsonData: Partial<VllmDataSourceOptions> = {}
) {
  const ds = new DataSource({ ...instanceSettings, jsonData }, fakeTemplateSrv(vars));
  const getResource = jest.spyOn(ds, 'getResource').mockImplementation(async (path: string) => {
    const answer = routes[path];
    if (answer instanceof Error || (answer && typeof answer === 'object' && 'status' in answer)) {
      throw answer;
    }
    if (answer === undefined) {
      throw { status: 404, statusText: 'Not Found', data: { message: `no route ${path}` } };
    }
    return answer;
  });
  return { ds, getResource };
}
