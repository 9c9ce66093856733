import { CoreApp, dateTime, FieldType, toDataFrame, type DataQueryRequest } from '@grafana/data';
import { firstValueFrom, of } from 'rxjs';

import { DataSource, regexFormatter, type LabelVariableQuery } from './datasource';
import { dataSourceWith, fakeTemplateSrv, instanceSettings } from './testUtils';
import { ANOMALOUS_CHOICES, requestChoices, type VllmVariableSupport } from './variables';
import { QUERY_DEFAULTS, type VllmQuery, type VllmVariableQuery } from './types';

const vars = {
  instance: ['10.0.0.1:8000', '10.0.0.2:8000'],
  one: ['gpu-1:8000'],
  model: 'qwen-0.5b',
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  sigs: ['ttft_p99', 'kv_usage'],
  rule: 'kv_cache_saturated',
  from: 'now-7d',
  topk: '5',
  slo: ['up', 'ttft-1s'],
};

function dataSource() {
  return new DataSource(instanceSettings, fakeTemplateSrv(vars));
}

describe('regexFormatter', () => {
  it.each([
    ['one value, escaped', 'qwen-0.5b', 'qwen-0\\.5b'],
    ['a one-element list, escaped', ['10.0.0.1:8000'], '10\\.0\\.0\\.1:8000'],
    ['several values, as an alternation', ['a.b', 'c|d'], '(a\\.b|c\\|d)'],
    ['a model name with a slash, which RE2 reads escaped too', 'Qwen/Qwen2.5', 'Qwen\\/Qwen2\\.5'],
  ])('formats %s', (_name, value, want) => {
    expect(regexFormatter(value)).toBe(want);
  });

  it('escapes every regular-expression metacharacter', () => {
    const value = '.*+?^$' + '{}()|[]\\/';
    expect(new RegExp(`^${regexFormatter(value)}$`).test(value)).toBe(true);
  });
});

describe('applyTemplateVariables', () => {
  it.each<[string, Partial<VllmQuery>, Partial<VllmQuery>]>([
    [
      'a multi-value instance as a regex alternation',
      { instance: '$instance' },
      { instance: '(10\\.0\\.0\\.1:8000|10\\.0\\.0\\.2:8000)' },
    ],
    ['a single-value instance as an escaped literal', { instance: '${one}' }, { instance: 'gpu-1:8000' }],
    ['a model variable as an escaped literal', { model: '$model' }, { model: 'qwen-0\\.5b' }],
    ['a typed regular expression untouched', { instance: 'gpu-.*' }, { instance: 'gpu-.*' }],
    ['the trace id', { traceId: '${traceId}' }, { traceId: vars.traceId }],
    [
      'a multi-value signal variable into several signals',
      { signals: ['ttft_p50', '$sigs'] },
      { signals: ['ttft_p50', 'ttft_p99', 'kv_usage'] },
    ],
    ['rules', { rules: ['$rule'] }, { rules: ['kv_cache_saturated'] }],
    ['a typed objective', { slos: ['ttft-2s', '$slo'] }, { slos: ['ttft-2s', 'up', 'ttft-1s'] }],
    ["a verdict's rule", { rule: '$rule' }, { rule: 'kv_cache_saturated' }],
    [
      'the baseline window',
      { baselineFrom: '$from', baselineTo: 'now-6d' },
      { baselineFrom: 'now-7d', baselineTo: 'now-6d' },
    ],
    ['the text form', { expr: 'explain ${traceId}' }, { expr: `explain ${vars.traceId}` }],
    ['the number of worst instances', { topK: '$topk' }, { topK: '5' }],
  ])('interpolates %s', (_name, fields, want) => {
    const got = dataSource().applyTemplateVariables({ refId: 'A', ...fields }, {});
    expect(got).toMatchObject(want);
  });

  it('keeps the fields that take no variables', () => {
    const q: VllmQuery = {
      refId: 'A',
      queryType: 'requests',
      anomalousOnly: true,
      minTtft: 2,
      limit: 50,
      optimisations: ['spec_decode'],
    };
    expect(dataSource().applyTemplateVariables(q, {})).toMatchObject(q);
  });

  it('leaves absent lists absent, so the backend applies its defaults', () => {
    const got = dataSource().applyTemplateVariables({ refId: 'A', queryType: 'diagnosis' }, {});
    expect(got.rules).toBeUndefined();
    expect(got.signals).toBeUndefined();
  });
});

describe('filterQuery', () => {
  it.each<[string, VllmQuery, boolean]>([
    ['a signals query', { refId: 'A', queryType: 'signals' }, true],
    ['a text-form query', { refId: 'A', expr: 'explain abc' }, true],
    ['a hidden query', { refId: 'A', queryType: 'signals', hide: true }, false],
    [
      'an explain without a trace id, which the backend answers with what to do',
      { refId: 'A', queryType: 'explain', traceId: ' ' },
      true,
    ],
    ['an explain with a trace id', { refId: 'A', queryType: 'explain', traceId: 'abc' }, true],
  ])('%s → %p', (_name, q, want) => {
    expect(dataSource().filterQuery(q)).toBe(want);
  });
});

describe('defaults', () => {
  it("offers a signals query that shows something with no input: the backend's default signals", () => {
    expect(dataSource().getDefaultQuery(CoreApp.PanelEditor)).toEqual({
      queryType: 'signals',
      signals: ['ttft_p50', 'ttft_p99', 'kv_usage'],
    });
    expect(QUERY_DEFAULTS.signals.signals).toEqual(['ttft_p50', 'ttft_p99', 'kv_usage']);
  });

  it('offers diagnosis findings as the default annotation query', () => {
    expect(dataSource().annotations?.getDefaultQuery?.()).toEqual({
      queryType: 'diagnosis',
      format: 'findings',
      headlineOnly: true,
    });
  });
});

const range = {
  from: dateTime(1_700_000_000_000),
  to: dateTime(1_700_003_600_000),
  raw: { from: 'now-1h', to: 'now' },
};

function variableSupport(ds: DataSource) {
  return ds.variables as VllmVariableSupport;
}

/** A variable request whose target is a saved variable query, which older dashboards hold as a string. */
function variableRequest(target: VllmVariableQuery | string) {
  return { targets: [target], range, scopedVars: {} } as unknown as DataQueryRequest<VllmVariableQuery>;
}

describe('metricFindQuery', () => {
  it.each<[string, LabelVariableQuery, string, Record<string, string>]>([
    ['instances', { kind: 'instances' }, 'instances', {}],
    ['models', { kind: 'models' }, 'models', {}],
    ['instances of a model variable', { kind: 'instances', model: '$model' }, 'instances', { model: 'qwen-0\\.5b' }],
    [
      'models on a multi-value instance variable',
      { kind: 'models', instance: '$instance' },
      'models',
      { instance: '(10\\.0\\.0\\.1:8000|10\\.0\\.0\\.2:8000)' },
    ],
  ])('asks the backend for %s', async (_name, query, path, params) => {
    const { ds, getResource } = dataSourceWith({ instances: ['a:8000'], models: ['m'] }, vars);
    await ds.metricFindQuery(query);
    expect(getResource).toHaveBeenCalledWith(path, params);
  });

  it('bounds the label search by the dashboard time range', async () => {
    const { ds, getResource } = dataSourceWith({ models: ['m'] });
    await ds.metricFindQuery({ kind: 'models' }, { range });
    expect(getResource).toHaveBeenCalledWith('models', { from: '1700000000000', to: '1700003600000' });
  });

  it('returns each value as text and value', async () => {
    const { ds } = dataSourceWith({ instances: ['a:8000', 'b:8000'] });
    expect(await ds.metricFindQuery({ kind: 'instances' })).toEqual([
      { text: 'a:8000', value: 'a:8000' },
      { text: 'b:8000', value: 'b:8000' },
    ]);
  });

  it('passes a backend failure on to Grafana, which shows it under the variable', async () => {
    const { ds } = dataSourceWith({ instances: { status: 502, data: { error: 'Prometheus unreachable' } } });
    await expect(ds.metricFindQuery({ kind: 'instances' })).rejects.toMatchObject({
      data: { error: 'Prometheus unreachable' },
    });
  });
});

describe('the variable support', () => {
  it("answers with the label route's values, as metricFindQuery", async () => {
    const { ds } = dataSourceWith({ models: ['m1', 'm2'] });
    const response = await firstValueFrom(variableSupport(ds).query(variableRequest({ refId: 'V', kind: 'models' })));
    expect(response.data).toEqual([
      { text: 'm1', value: 'm1' },
      { text: 'm2', value: 'm2' },
    ]);
  });

  // Grafana hands on the saved variable query as it is, as the editor reads it (variableQuery).
  it.each([
    ['a variable saved without a query, as instances', '', 'instances'],
    ['the plain string form of older dashboards', 'models', 'models'],
  ])('serves %s', async (_name, saved, path) => {
    const { ds, getResource } = dataSourceWith({ instances: ['a:8000'], models: ['m'] });
    await firstValueFrom(variableSupport(ds).query(variableRequest(saved)));
    expect(getResource).toHaveBeenCalledWith(path, expect.anything());
  });

  it.each([
    [
      "the settings' trace data source",
      { tracesDatasourceUid: 'tempo-prod' },
      [{ text: 'tempo-prod', value: 'tempo-prod' }],
    ],
    ['no trace data source when the settings name none', {}, []],
  ])('offers %s', async (_name, jsonData, want) => {
    const { ds } = dataSourceWith({}, {}, jsonData);
    const response = await firstValueFrom(
      variableSupport(ds).query(variableRequest({ refId: 'V', kind: 'traceDatasource' }))
    );
    expect(response.data).toEqual(want);
  });

  it('starts a new variable on the instances', () => {
    const { ds } = dataSourceWith({});
    expect(variableSupport(ds).getDefaultQuery()).toMatchObject({ kind: 'instances' });
  });
});

describe('the anomalous requests variable', () => {
  const answer = toDataFrame({
    name: 'requests',
    fields: [
      { name: 'trace_id', type: FieldType.string, values: ['t-worst', 't-next'] },
      { name: 'instance', type: FieldType.string, values: ['a:8000', 'b:8000'] },
      { name: 'anomalies', type: FieldType.string, values: ['ttft_high', ''] },
    ],
  });

  function ask(query: VllmVariableQuery) {
    const ds = dataSource();
    const sent = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [answer] }));
    return { sent, response: firstValueFrom(variableSupport(ds).query(variableRequest(query))) };
  }

  it('asks the backend for the anomalous requests of the instances and models given', async () => {
    const { sent, response } = ask({ refId: 'V', kind: 'anomalousRequests', instance: '$instance', model: '$model' });
    await response;
    expect(sent.mock.calls[0][0].targets).toEqual([
      {
        refId: 'V',
        queryType: 'requests',
        anomalousOnly: true,
        instance: '$instance',
        model: '$model',
        limit: ANOMALOUS_CHOICES,
      },
    ]);
    expect(sent.mock.calls[0][0].range).toBe(range);
  });

  it("offers their trace ids in the answer's order, the most anomalous first", async () => {
    const { response } = ask({ refId: 'V', kind: 'anomalousRequests' });
    expect((await response).data).toEqual([
      { value: 't-worst', text: 't-worst (a:8000 · ttft_high)' },
      { value: 't-next', text: 't-next (b:8000)' },
    ]);
  });

  it('offers nothing when the range holds no anomalous request', () => {
    expect(requestChoices([toDataFrame({ name: 'requests', fields: [] })])).toEqual([]);
  });
});
