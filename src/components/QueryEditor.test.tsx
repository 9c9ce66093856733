import { dateTime } from '@grafana/data';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { selectors } from '../selectors';
import { dataSourceWith, RULES, SIGNALS, type Routes } from '../testUtils';
import { SLO_FORMATS, type VllmQuery } from '../types';
import { QueryEditor } from './QueryEditor';
import { chooseOption, openSelect, typeAndLeave, typeCustomValue } from './userActions';

const ids = selectors.queryEditor;

const OBJECTIVES = [
  { name: 'ttft-2s', indicator: 'ttft' as const, threshold: 2, objective: 0.99, window: '28d' },
  { name: 'up', indicator: 'availability' as const, objective: 0.999, window: '7d' },
];

const allRoutes: Routes = {
  instances: ['10.0.0.1:8000', '10.0.0.2:8000'],
  models: ['qwen-0.5b'],
  signals: SIGNALS,
  rules: RULES,
};

function setup(query: Omit<VllmQuery, 'refId'>, routes: Routes = allRoutes) {
  const { ds } = dataSourceWith(routes, { instance: ['10.0.0.1:8000'] }, { slos: OBJECTIVES });
  const onChange = jest.fn<void, [VllmQuery]>();
  const onRunQuery = jest.fn();
  const user = userEvent.setup();
  render(<QueryEditor datasource={ds} query={{ refId: 'A', ...query }} onChange={onChange} onRunQuery={onRunQuery} />);
  const lastQuery = () => onChange.mock.calls[onChange.mock.calls.length - 1]?.[0];
  return { user, onChange, onRunQuery, lastQuery };
}

describe('QueryEditor: common fields', () => {
  it('switching the query type fills that type defaults and runs the query', async () => {
    const { user, lastQuery, onRunQuery } = setup({ queryType: 'signals', signals: ['kv_usage'] });
    await user.click(within(screen.getByTestId(ids.queryType)).getByText('Diagnosis'));
    expect(lastQuery()).toMatchObject({ queryType: 'diagnosis', format: 'findings', signals: ['kv_usage'] });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('a new requests query gets the default limit of 100', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await user.click(within(screen.getByTestId(ids.queryType)).getByText('Requests'));
    expect(lastQuery()).toMatchObject({ queryType: 'requests', limit: 100 });
  });

  it.each<[string, Omit<VllmQuery, 'refId'>, string, VllmQuery['format']]>([
    ['diagnosis to slo, whose default it takes', { queryType: 'diagnosis', format: 'findings' }, 'SLO', 'status'],
    ['timeline to explain', { queryType: 'diagnosis', format: 'timeline' }, 'Explain', undefined],
    ['slo to signals, which has no format', { queryType: 'slo', format: 'burn' }, 'Signals', undefined],
  ])('switching %s drops a format the new type does not have', async (_name, query, button, format) => {
    const { user, lastQuery } = setup(query);
    await user.click(within(screen.getByTestId(ids.queryType)).getByText(button));
    expect(lastQuery()?.format).toBe(format);
  });

  it('switching the query type keeps a value the query already has over the default', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals', limit: 20 });
    await user.click(within(screen.getByTestId(ids.queryType)).getByText('Requests'));
    expect(lastQuery()).toMatchObject({ queryType: 'requests', limit: 20 });
  });

  it('offers the instances from the backend', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await chooseOption(user, ids.instance, '10.0.0.2:8000');
    expect(lastQuery()).toMatchObject({ instance: '10.0.0.2:8000' });
  });

  it('offers the dashboard template variables as instances', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await chooseOption(user, ids.instance, '$instance');
    expect(lastQuery()).toMatchObject({ instance: '$instance' });
  });

  it('accepts a typed regular expression as the model', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await typeCustomValue(user, ids.model, 'qwen-.*');
    expect(lastQuery()).toMatchObject({ model: 'qwen-.*' });
  });

  it('stays usable when the backend cannot list instances, and says why', async () => {
    const { user, lastQuery } = setup(
      { queryType: 'signals' },
      { ...allRoutes, instances: { status: 502, data: { error: 'Prometheus at http://prom:9090 is unreachable' } } }
    );
    expect(await screen.findByTestId(ids.resourceError)).toHaveTextContent(
      'Prometheus at http://prom:9090 is unreachable'
    );
    await typeCustomValue(user, ids.instance, 'gpu-1:8000');
    expect(lastQuery()).toMatchObject({ instance: 'gpu-1:8000' });
  });

  it('shows a text-form query from a trace link as the query it stands for', async () => {
    const { user, lastQuery } = setup({ expr: 'explain 4bf92f35' });
    expect(screen.getByTestId(ids.expr)).toHaveTextContent('explain 4bf92f35');
    expect(screen.getByTestId(ids.traceId)).toHaveValue('4bf92f35');
    await typeAndLeave(user, ids.traceId, 'abcdef');
    expect(lastQuery()).toEqual({ refId: 'A', queryType: 'explain', traceId: 'abcdef' });
  });

  it('saves a text form it cannot read as the structured query it shows, as its notice says', async () => {
    const { user, lastQuery } = setup({ expr: 'explain' });
    expect(screen.getByTestId(ids.expr)).toHaveTextContent('saves it as a structured query');
    await typeAndLeave(user, ids.topK, '5');
    expect(lastQuery()).toEqual({ refId: 'A', queryType: 'signals', topK: '5' });
  });
});

describe('QueryEditor: signals', () => {
  it('shows the chosen signals with their units', async () => {
    setup({ queryType: 'signals', signals: ['ttft_p99'] });
    expect(await screen.findByText('TTFT p99 (s)')).toBeInTheDocument();
  });

  it('lists the catalog grouped, and adds the chosen signal', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals', signals: ['ttft_p99'] });
    await screen.findByText('TTFT p99 (s)');
    await openSelect(user, ids.signals);
    expect(screen.getByText('Latency')).toBeInTheDocument();
    expect(screen.getByText('Capacity')).toBeInTheDocument();
    await user.click(screen.getByText('KV cache usage (percentunit)'));
    expect(lastQuery()).toMatchObject({ signals: ['ttft_p99', 'kv_usage'] });
  });

  it('accepts a signal name typed by hand when the catalog cannot load', async () => {
    const { user, lastQuery } = setup(
      { queryType: 'signals', signals: [] },
      { ...allRoutes, signals: new Error('Failed to fetch') }
    );
    expect(await screen.findByTestId(ids.resourceError)).toHaveTextContent('Failed to fetch');
    await typeCustomValue(user, ids.signals, 'ttft_p90');
    expect(lastQuery()).toMatchObject({ signals: ['ttft_p90'] });
  });
});

describe('QueryEditor: each query type shows its own fields', () => {
  const fields: Record<string, string[]> = {
    signals: [ids.signals, ids.topK],
    diagnosis: [ids.format, ids.rules, ids.headlineOnly, ids.severities, ids.oneInstance],
    requests: [ids.anomalousOnly, ids.minTtft, ids.limit],
    explain: [ids.traceId],
    verdict: [ids.baselineFrom, ids.baselineTo, ids.optimisations, ids.verdictRule],
    slo: [ids.sloFormat, ids.slos],
  };
  const all = Object.values(fields).flat();
  it.each(Object.keys(fields))('%s', async (queryType) => {
    setup({ queryType: queryType as VllmQuery['queryType'] });
    await waitFor(() => expect(screen.getByTestId(ids.instance)).toBeInTheDocument());
    expect(screen.getByTestId(ids.model)).toBeInTheDocument();
    for (const id of all) {
      if (fields[queryType].includes(id)) {
        expect(screen.getByTestId(id)).toBeInTheDocument();
      } else {
        expect(screen.queryByTestId(id)).not.toBeInTheDocument();
      }
    }
  });
});

describe('QueryEditor: diagnosis', () => {
  it('sets the fleet format', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings' });
    await user.click(within(screen.getByTestId(ids.format)).getByText('Fleet'));
    expect(lastQuery()).toMatchObject({ format: 'fleet' });
  });

  it('asks for headline findings only, and for secondary ones again', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings' });
    await user.click(screen.getByTestId(ids.headlineOnly));
    expect(lastQuery()).toMatchObject({ headlineOnly: true });
  });

  it('narrows the findings to the chosen severities', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings', severities: ['critical'] });
    await chooseOption(user, ids.severities, 'warning');
    expect(lastQuery()).toMatchObject({ severities: ['critical', 'warning'] });
  });

  it('hides the findings filters outside the findings format', async () => {
    setup({ queryType: 'diagnosis', format: 'timeline' });
    expect(screen.queryByTestId(ids.headlineOnly)).not.toBeInTheDocument();
    expect(screen.queryByTestId(ids.severities)).not.toBeInTheDocument();
    expect(screen.queryByTestId(ids.oneInstance)).not.toBeInTheDocument();
  });

  it("asks for one instance's findings only, as graph annotations do", async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings' });
    await user.click(screen.getByTestId(ids.oneInstance));
    expect(lastQuery()).toMatchObject({ oneInstance: true });
  });

  it('asks a timeline for rule rows, and shows the switch for the timeline only', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'timeline' });
    await user.click(screen.getByTestId(ids.ruleRows));
    expect(lastQuery()).toMatchObject({ ruleRows: true });
  });

  it('sets the recommendation format', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings' });
    await user.click(within(screen.getByTestId(ids.format)).getByText('Recommendation'));
    expect(lastQuery()).toMatchObject({ format: 'recommendation' });
  });

  it('sets the alert format', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis', format: 'findings' });
    await user.click(within(screen.getByTestId(ids.format)).getByText('Alert'));
    expect(lastQuery()).toMatchObject({ format: 'alert' });
  });

  it('narrows the rules to the ones chosen from the backend', async () => {
    const { user, lastQuery } = setup({ queryType: 'diagnosis' });
    await chooseOption(user, ids.rules, 'kv_cache_saturated');
    expect(lastQuery()).toMatchObject({ rules: ['kv_cache_saturated'] });
  });
});

describe('QueryEditor: requests', () => {
  it('sets anomalous only', async () => {
    const { user, lastQuery } = setup({ queryType: 'requests' });
    await user.click(screen.getByTestId(ids.anomalousOnly));
    expect(lastQuery()).toMatchObject({ anomalousOnly: true });
  });

  it.each<[string, string, string, Partial<VllmQuery>]>([
    ['a minimum TTFT in seconds', ids.minTtft, '2.5', { minTtft: 2.5 }],
    ['a limit', ids.limit, '20', { limit: 20 }],
  ])('sets %s', async (_name, testId, text, want) => {
    const { user, lastQuery } = setup({ queryType: 'requests' });
    await typeAndLeave(user, testId, text);
    expect(lastQuery()).toMatchObject(want);
  });

  it.each([
    ['a negative minimum TTFT', ids.minTtft, '-1', /0 or more/],
    ['a fractional limit', ids.limit, '2.5', /whole number/],
    ['a limit in words', ids.limit, 'ten', /whole number/],
  ])('refuses %s inline and keeps the query', async (_name, testId, text, message) => {
    const { user, onChange } = setup({ queryType: 'requests' });
    await typeAndLeave(user, testId, text);
    expect(screen.getByRole('alert')).toHaveTextContent(message);
    expect(onChange).not.toHaveBeenCalled();
  });
});

describe('QueryEditor: explain', () => {
  it.each(['4bf92f3577b34da6a3ce929d0e0e4736', '${traceId}', '$trace'])('takes the trace id %p', async (traceId) => {
    const { user, lastQuery, onRunQuery } = setup({ queryType: 'explain' });
    await typeAndLeave(user, ids.traceId, traceId);
    expect(lastQuery()).toMatchObject({ queryType: 'explain', traceId });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('refuses a trace id that is not hexadecimal, inline', async () => {
    const { user, onChange } = setup({ queryType: 'explain' });
    await typeAndLeave(user, ids.traceId, 'not-a-trace');
    expect(screen.getByRole('alert')).toHaveTextContent(/1 to 32 hexadecimal characters/);
    expect(onChange).not.toHaveBeenCalled();
  });
});

describe('QueryEditor: verdict', () => {
  it.each<[string, string, string, Partial<VllmQuery>]>([
    ['a relative baseline start', ids.baselineFrom, 'now-7d', { baselineFrom: 'now-7d' }],
    ['an RFC 3339 baseline end', ids.baselineTo, '2026-05-01T10:00:00Z', { baselineTo: '2026-05-01T10:00:00Z' }],
  ])('sets %s', async (_name, testId, text, want) => {
    const { user, lastQuery } = setup({ queryType: 'verdict' });
    await typeAndLeave(user, testId, text);
    expect(lastQuery()).toMatchObject(want);
  });

  it('refuses a baseline time it cannot read, inline', async () => {
    const { user, onChange } = setup({ queryType: 'verdict' });
    await typeAndLeave(user, ids.baselineFrom, 'last week');
    expect(screen.getByRole('alert')).toHaveTextContent(/RFC 3339/);
    expect(onChange).not.toHaveBeenCalled();
  });

  it('records the optimisations the user states are in use', async () => {
    const { user, lastQuery } = setup({ queryType: 'verdict', optimisations: ['chunked_prefill'] });
    await chooseOption(user, ids.optimisations, 'Prefix caching');
    expect(lastQuery()).toMatchObject({ optimisations: ['chunked_prefill', 'prefix_caching'] });
  });

  it("checks the promise of a rule chosen from the backend's", async () => {
    const { user, lastQuery } = setup({ queryType: 'verdict' });
    await chooseOption(user, ids.verdictRule, 'kv_cache_saturated');
    expect(lastQuery()).toMatchObject({ rule: 'kv_cache_saturated' });
  });
});

describe('QueryEditor: slo', () => {
  it('a new slo query gets the status format', async () => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await user.click(within(screen.getByTestId(ids.queryType)).getByText('SLO'));
    expect(lastQuery()).toMatchObject({ queryType: 'slo', format: 'status' });
  });

  it('switches to the attribution format', async () => {
    const { user, lastQuery } = setup({ queryType: 'slo' });
    await user.click(within(screen.getByTestId(ids.sloFormat)).getByText('Attribution'));
    expect(lastQuery()).toMatchObject({ format: 'attribution' });
  });

  it('switches to the goodput format', async () => {
    const { user, lastQuery } = setup({ queryType: 'slo' });
    await user.click(within(screen.getByTestId(ids.sloFormat)).getByText('Goodput'));
    expect(lastQuery()).toMatchObject({ format: 'goodput' });
  });

  it("offers the objectives of the data source's settings", async () => {
    const { user, lastQuery } = setup({ queryType: 'slo' });
    await chooseOption(user, ids.slos, 'up');
    expect(lastQuery()).toMatchObject({ slos: ['up'] });
  });

  it('switches to the burn format', async () => {
    const { user, lastQuery } = setup({ queryType: 'slo' });
    await user.click(within(screen.getByTestId(ids.sloFormat)).getByText('Burn'));
    expect(lastQuery()).toMatchObject({ format: 'burn' });
  });

  it.each<[string, VllmQuery['format'], string[]]>([
    ['no format as the default, status', undefined, ['Status']],
    ['its format', 'budget', ['Budget']],
    ['a format of another query type as none of its own', 'findings', []],
  ])('shows %s', async (_name, format, checked) => {
    setup({ queryType: 'slo', format });
    const labels = () =>
      within(screen.getByTestId(ids.sloFormat))
        .queryAllByRole('radio', { checked: true })
        .map((r) => (r as HTMLInputElement).labels?.[0]?.textContent?.trim());
    await waitFor(() => expect(labels()).toEqual(checked));
  });

  it.each(SLO_FORMATS)('shows the burn severity for the burn format only: %s', async (format) => {
    setup({ queryType: 'slo', format });
    await waitFor(() => expect(screen.queryByTestId(ids.burnSeverity) !== null).toBe(format === 'burn'));
  });

  it.each<[string, Partial<VllmQuery>, string, Partial<VllmQuery>]>([
    ['the page series only', {}, 'Page', { severity: 'page' }],
    ['both series again', { severity: 'ticket' }, 'Both', { severity: undefined }],
  ])('asks a burn query for %s', async (_name, fields, button, want) => {
    const { user, lastQuery } = setup({ queryType: 'slo', format: 'burn', ...fields });
    await user.click(within(screen.getByTestId(ids.burnSeverity)).getByText(button));
    expect(lastQuery()?.severity).toBe(want.severity);
  });
});

it('lists the instances and models seen in the panel time range', async () => {
  const { ds, getResource } = dataSourceWith(allRoutes);
  const range = {
    from: dateTime(1_700_000_000_000),
    to: dateTime(1_700_003_600_000),
    raw: { from: 'now-1h', to: 'now' },
  };
  render(
    <QueryEditor
      datasource={ds}
      query={{ refId: 'A', queryType: 'signals' }}
      range={range}
      onChange={jest.fn()}
      onRunQuery={jest.fn()}
    />
  );
  const window = { from: '1700000000000', to: '1700003600000' };
  await waitFor(() => expect(getResource).toHaveBeenCalledWith('instances', window));
  expect(getResource).toHaveBeenCalledWith('models', window);
});

it('loads each catalog once per editor', async () => {
  const { ds, getResource } = dataSourceWith(allRoutes);
  render(
    <QueryEditor
      datasource={ds}
      query={{ refId: 'A', queryType: 'signals' }}
      onChange={jest.fn()}
      onRunQuery={jest.fn()}
    />
  );
  await waitFor(() => expect(getResource).toHaveBeenCalledTimes(3));
  expect(getResource.mock.calls.map((c) => c[0]).sort()).toEqual(['instances', 'models', 'signals']);
});

describe('QueryEditor: signals top k', () => {
  it.each<[string, string, Partial<VllmQuery>]>([
    ['a number', '5', { topK: '5' }],
    ['a template variable', '$topk', { topK: '$topk' }],
  ])('sets the top k as %s', async (_name, text, want) => {
    const { user, lastQuery } = setup({ queryType: 'signals' });
    await typeAndLeave(user, ids.topK, text);
    expect(lastQuery()).toMatchObject(want);
  });

  it('refuses a top k in words inline and keeps the query', async () => {
    const { user, onChange } = setup({ queryType: 'signals' });
    await typeAndLeave(user, ids.topK, 'five');
    expect(screen.getByRole('alert')).toHaveTextContent(/whole number/);
    expect(onChange).not.toHaveBeenCalled();
  });
});

describe('QueryEditor: text fields', () => {
  it.each<[keyof typeof ids & keyof VllmQuery, Omit<VllmQuery, 'refId'>]>([
    ['topK', { queryType: 'signals', topK: '5' }],
    ['minTtft', { queryType: 'requests', minTtft: 2.5 }],
    ['limit', { queryType: 'requests', limit: 20 }],
    ['traceId', { queryType: 'explain', traceId: '4bf92f35' }],
    ['baselineFrom', { queryType: 'verdict', baselineFrom: 'now-7d' }],
    ['baselineTo', { queryType: 'verdict', baselineTo: 'now-6d' }],
  ])('clearing %s leaves it unset: the backend reads its default', async (field, query) => {
    const { user, lastQuery } = setup(query);
    await typeAndLeave(user, ids[field], '');
    expect(lastQuery()).toEqual({ refId: 'A', queryType: query.queryType });
  });
});
