import { type DataSourceInstanceSettings, type DataSourceSettings } from '@grafana/data';
import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';

import { selectors } from '../selectors';
import { RULES } from '../testUtils';
import { type VllmDataSourceOptions, type VllmSecureJsonData } from '../types';
import { ConfigEditor, DOCS } from './ConfigEditor';
import { typeAndLeave } from './userActions';

// Stand-ins for Grafana's services: the backend's rules route (answered by mockGet) and the
// data source picker, which needs Grafana's data source registry.
const mockGet = jest.fn();
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ get: mockGet }),
  DataSourcePicker: (props: { onChange: (ds: Partial<DataSourceInstanceSettings>) => void; type: string[] }) => (
    <button type="button" onClick={() => props.onChange({ uid: 'tempo-uid', type: 'tempo' })}>
      pick {props.type.join(' or ')}
    </button>
  ),
}));

const ids = selectors.configEditor;

type Settings = DataSourceSettings<VllmDataSourceOptions, VllmSecureJsonData>;

function settings(jsonData: VllmDataSourceOptions = {}, secureJsonFields: Record<string, boolean> = {}): Settings {
  return {
    id: 1,
    uid: 'vllm-uid',
    orgId: 1,
    name: 'vLLM',
    type: 'seed-vllm-datasource',
    typeName: 'vLLM Diagnosis',
    typeLogoUrl: '',
    access: 'proxy',
    url: 'http://prometheus:9090',
    user: '',
    database: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    withCredentials: false,
    readOnly: false,
    jsonData,
    secureJsonFields,
    secureJsonData: {},
  };
}

/**
 * Renders the editor the way Grafana does (each change comes back as the new options), once the
 * rules request has been answered.
 */
async function setup(initial: Settings, rules: unknown = RULES) {
  if (rules instanceof Error || (rules && typeof rules === 'object' && 'status' in rules)) {
    mockGet.mockRejectedValue(rules);
  } else {
    mockGet.mockResolvedValue(rules);
  }
  const onOptionsChange = jest.fn<void, [Settings]>();
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(next) => {
          onOptionsChange(next);
          setOptions(next);
        }}
      />
    );
  }
  render(<Harness />);
  await act(async () => {});
  const last = () => onOptionsChange.mock.calls[onOptionsChange.mock.calls.length - 1]?.[0];
  return { user: userEvent.setup(), onOptionsChange, last };
}

const tempo = { tracesBackend: 'tempo' as const };

beforeEach(() => mockGet.mockReset());

describe('ConfigEditor: sections', () => {
  it('lays the page out in the sections of Grafana data source pages, each with a heading', async () => {
    await setup(settings());
    for (const heading of [
      'Connection',
      'Authentication',
      'Additional settings',
      'vLLM metrics',
      'Traces',
      'Rule thresholds',
      'Service-level objectives',
    ]) {
      expect(screen.getByRole('heading', { name: heading })).toBeInTheDocument();
    }
  });

  it('links each section to the README section that explains it', async () => {
    await setup(settings());
    const hrefs = screen.getAllByRole('link').map((a) => a.getAttribute('href'));
    expect(hrefs).toEqual(expect.arrayContaining([DOCS.settings, DOCS.queries, DOCS.matrix]));
    for (const href of Object.values(DOCS)) {
      expect(href).toMatch(/README\.md#[a-z-]+$/);
    }
  });
});

describe('ConfigEditor: Prometheus connection', () => {
  it('shows the Prometheus URL in the connection section and saves a new one', async () => {
    const { user, last } = await setup(settings());
    const url = screen.getByDisplayValue('http://prometheus:9090');
    await user.clear(url);
    await user.click(url);
    await user.paste('http://thanos:10902');
    expect(last()?.url).toBe('http://thanos:10902');
  });

  it('offers no auth, basic auth, TLS and custom headers', async () => {
    await setup(settings());
    expect(screen.getByText('No Authentication')).toBeInTheDocument();
    expect(screen.getByText('TLS settings')).toBeInTheDocument();
    expect(screen.getByText('HTTP headers')).toBeInTheDocument();
  });

  it('shows basic auth with its user, and resets a saved password through Grafana secure fields', async () => {
    const { user, last } = await setup({
      ...settings({}, { basicAuthPassword: true }),
      basicAuth: true,
      basicAuthUser: 'grafana',
    });
    expect(screen.getByDisplayValue('grafana')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last()?.secureJsonFields).toMatchObject({ basicAuthPassword: false });
    expect(JSON.stringify(last()?.jsonData)).not.toContain('basicAuthPassword');
  });

  it('folds the advanced HTTP settings (timeout, cookies) until opened', async () => {
    const { user } = await setup(settings());
    expect(screen.queryByText('Timeout')).not.toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: /Additional settings/ }));
    expect(screen.getByText('Timeout')).toBeInTheDocument();
    expect(screen.getByText('Allowed cookies')).toBeInTheDocument();
  });
});

describe('ConfigEditor: vLLM metrics', () => {
  it.each<[string, string, string, Partial<VllmDataSourceOptions>]>([
    ['the scrape interval', ids.scrapeInterval, '1m', { scrapeInterval: '1m' }],
    ['label matchers', ids.labelMatchers, '{job="vllm"}', { labelMatchers: '{job="vllm"}' }],
    ['the instance label', ids.instanceLabel, 'pod', { instanceLabel: 'pod' }],
    ['the model label', ids.modelLabel, 'model', { modelLabel: 'model' }],
  ])('saves %s', async (_name, testId, text, want) => {
    const { user, last } = await setup(settings());
    await typeAndLeave(user, testId, text);
    expect(last()?.jsonData).toMatchObject(want);
  });

  it.each([
    ['a scrape interval without a unit', ids.scrapeInterval, '15', /duration such as/],
    ['a scrape interval under 1s', ids.scrapeInterval, '500ms', /1s or more/],
    ['matchers without braces', ids.labelMatchers, 'job="vllm"', /in braces/],
    ['a label name starting with a digit', ids.instanceLabel, '1abc', /Prometheus label name/],
  ])('refuses %s inline and saves nothing', async (_name, testId, text, message) => {
    const { user, onOptionsChange } = await setup(settings());
    await typeAndLeave(user, testId, text);
    expect(screen.getByRole('alert')).toHaveTextContent(message);
    expect(onOptionsChange).not.toHaveBeenCalled();
  });

  it('clearing a setting removes it, so the backend default applies', async () => {
    const { user, last } = await setup(settings({ scrapeInterval: '30s' }));
    await typeAndLeave(user, ids.scrapeInterval, '');
    expect(last()?.jsonData).not.toHaveProperty('scrapeInterval');
  });

  it('shows the defaults as placeholders', async () => {
    await setup(settings(tempo));
    expect(screen.getByTestId(ids.scrapeInterval)).toHaveAttribute('placeholder', '15s');
    expect(screen.getByTestId(ids.modelLabel)).toHaveAttribute('placeholder', 'model_name');
    expect(screen.getByTestId(ids.spanName)).toHaveAttribute('placeholder', 'llm_request');
  });
});

describe('ConfigEditor: traces', () => {
  it('hides the trace settings while the backend is none', async () => {
    await setup(settings());
    expect(screen.queryByTestId(ids.tracesUrl)).not.toBeInTheDocument();
  });

  it('chooses the trace backend', async () => {
    const { user, last } = await setup(settings());
    await user.click(within(screen.getByTestId(ids.tracesBackend)).getByText('Jaeger'));
    expect(last()?.jsonData).toMatchObject({ tracesBackend: 'jaeger' });
    expect(screen.getByTestId(ids.tracesUrl)).toHaveAttribute('placeholder', 'http://jaeger:16686');
  });

  it('says a saved trace backend it does not know is none it reads, naming those it does', async () => {
    const zipkin = { tracesBackend: 'zipkin' } as unknown as Partial<VllmDataSourceOptions>;
    const { user, last } = await setup(settings(zipkin));
    expect(screen.getByRole('alert')).toHaveTextContent(
      '"zipkin" is not a trace backend this data source reads: choose one of None, Tempo, Jaeger'
    );
    expect(screen.queryByTestId(ids.tracesUrl)).not.toBeInTheDocument();
    await user.click(within(screen.getByTestId(ids.tracesBackend)).getByText('Tempo'));
    expect(last()?.jsonData).toMatchObject({ tracesBackend: 'tempo' });
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('saves an http URL for the traces', async () => {
    const { user, last } = await setup(settings(tempo));
    await typeAndLeave(user, ids.tracesUrl, 'http://tempo:3200');
    expect(last()?.jsonData).toMatchObject({ tracesUrl: 'http://tempo:3200' });
  });

  it('refuses a traces URL without a scheme, inline, and saves nothing', async () => {
    const { user, onOptionsChange } = await setup(settings(tempo));
    await typeAndLeave(user, ids.tracesUrl, 'tempo:3200');
    expect(screen.getByRole('alert')).toHaveTextContent('Use an http:// or https:// URL');
    expect(onOptionsChange).not.toHaveBeenCalled();
  });

  it.each<[string, string, string, Partial<VllmDataSourceOptions>]>([
    ['the basic auth user', ids.tracesBasicAuthUser, 'grafana', { tracesBasicAuthUser: 'grafana' }],
    ['the service name', ids.serviceName, 'vllm-prod', { serviceName: 'vllm-prod' }],
    ['the span name', ids.spanName, 'llm_request', { spanName: 'llm_request' }],
    ['the span instance attribute', ids.spanInstanceAttribute, 'host.name', { spanInstanceAttribute: 'host.name' }],
    [
      'the span model attribute',
      ids.spanModelAttribute,
      'gen_ai.request.model',
      { spanModelAttribute: 'gen_ai.request.model' },
    ],
  ])('saves %s', async (_name, testId, text, want) => {
    const { user, last } = await setup(settings(tempo));
    await typeAndLeave(user, testId, text);
    expect(last()?.jsonData).toMatchObject(want);
  });

  it('picks the Grafana trace data source among Tempo and Jaeger ones', async () => {
    const { user, last } = await setup(settings(tempo));
    await user.click(within(screen.getByTestId(ids.tracesDatasource)).getByText('pick tempo or jaeger'));
    expect(last()?.jsonData).toMatchObject({ tracesDatasourceUid: 'tempo-uid' });
  });
});

describe('ConfigEditor: trace secrets', () => {
  it.each([
    ['password', ids.tracesBasicAuthPassword, 'tracesBasicAuthPassword'],
    ['bearer token', ids.tracesBearerToken, 'tracesBearerToken'],
  ])('sends a new %s as secure data only', async (_name, testId, key) => {
    const { user, last } = await setup(settings(tempo));
    await user.type(screen.getByTestId(testId), 's3cret');
    expect(last()?.secureJsonData).toMatchObject({ [key]: 's3cret' });
    expect(JSON.stringify(last()?.jsonData)).not.toContain('s3cret');
  });

  it('shows a saved secret as configured without its value, and reset clears it', async () => {
    const { user, last } = await setup(settings(tempo, { tracesBearerToken: true }));
    const input = screen.getByTestId(ids.tracesBearerToken);
    expect(input).toHaveValue('configured');
    expect(input).toBeDisabled();
    await user.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last()?.secureJsonFields).toMatchObject({ tracesBearerToken: false });
    expect(last()?.secureJsonData).toMatchObject({ tracesBearerToken: '' });
    expect(screen.getByTestId(ids.tracesBearerToken)).toBeEnabled();
  });
});

describe('ConfigEditor: thresholds', () => {
  const group = (rule: string) => screen.getByTestId(ids.thresholdGroup(rule));
  const open = async (user: ReturnType<typeof userEvent.setup>, rule: string) => {
    await screen.findByTestId(ids.thresholdGroup(rule));
    await user.click(within(group(rule)).getByRole('button', { name: new RegExp(rule) }));
  };

  it('groups the parameters per rule, with its symptom, folded by default', async () => {
    await setup(settings());
    expect(await screen.findByTestId(ids.thresholdGroup('kv_cache_saturated'))).toBeInTheDocument();
    for (const r of RULES) {
      expect(within(group(r.id)).getByText(r.symptom)).toBeInTheDocument();
    }
    expect(screen.queryByTestId(ids.threshold('kv_cache_saturated', 'kv_usage'))).not.toBeInTheDocument();
    expect(mockGet).toHaveBeenCalledWith('api/datasources/uid/vllm-uid/resources/rules');
  });

  it('shows each parameter of an opened rule with its unit and default', async () => {
    const { user } = await setup(settings());
    await open(user, 'kv_cache_saturated');
    const g = group('kv_cache_saturated');
    expect(within(g).getByTestId(ids.threshold('kv_cache_saturated', 'kv_usage'))).toHaveAttribute(
      'placeholder',
      '0.85'
    );
    expect(within(g).getByText('default 0.85 ratio')).toBeInTheDocument();
    expect(within(g).getByText('default 0.5 /s')).toBeInTheDocument();
  });

  it('opens by itself a rule with an override, and says how many', async () => {
    await setup(settings({ thresholds: { prefill_blocking: { ratio: 3 } } }));
    expect(await screen.findByTestId(ids.threshold('prefill_blocking', 'ratio'))).toHaveValue('3');
    expect(within(group('prefill_blocking')).getByText('prefill_blocking (1 overridden)')).toBeInTheDocument();
    expect(screen.queryByTestId(ids.threshold('kv_cache_saturated', 'kv_usage'))).not.toBeInTheDocument();
  });

  it('saves a numeric override', async () => {
    const { user, last } = await setup(settings());
    await open(user, 'kv_cache_saturated');
    await typeAndLeave(user, ids.threshold('kv_cache_saturated', 'kv_usage'), '0.9');
    expect(last()?.jsonData.thresholds).toEqual({ kv_cache_saturated: { kv_usage: 0.9 } });
  });

  it('refuses a threshold that is not a number, inline, and saves nothing', async () => {
    const { user, onOptionsChange } = await setup(settings());
    await open(user, 'prefill_blocking');
    await typeAndLeave(user, ids.threshold('prefill_blocking', 'ratio'), 'high');
    expect(screen.getByRole('alert')).toHaveTextContent(/Enter a number/);
    expect(onOptionsChange).not.toHaveBeenCalled();
  });

  it('clearing the last override of a rule removes the rule and the empty table', async () => {
    const { user, last } = await setup(settings({ thresholds: { prefill_blocking: { ratio: 3 } } }));
    await screen.findByTestId(ids.threshold('prefill_blocking', 'ratio'));
    await typeAndLeave(user, ids.threshold('prefill_blocking', 'ratio'), '');
    expect(last()?.jsonData).not.toHaveProperty('thresholds');
  });

  it('keeps saved overrides editable when the rules cannot be loaded, and says why', async () => {
    const { user, last } = await setup(settings({ thresholds: { prefill_blocking: { ratio: 3 } } }), {
      status: 404,
      data: { message: 'Not found' },
    });
    expect(await screen.findByTestId(ids.rulesError)).toHaveTextContent('Not found');
    await typeAndLeave(user, ids.threshold('prefill_blocking', 'ratio'), '4');
    expect(last()?.jsonData.thresholds).toEqual({ prefill_blocking: { ratio: 4 } });
  });
});

it('never puts a typed secret into the settings that Grafana shows back', async () => {
  const { user, last } = await setup(settings(tempo));
  await user.type(screen.getByTestId(ids.tracesBasicAuthPassword), 'hunter2');
  await waitFor(() => expect(last()?.secureJsonData?.tracesBasicAuthPassword).toBe('hunter2'));
  expect(last()?.jsonData).not.toHaveProperty('tracesBasicAuthPassword');
});

describe('ConfigEditor: service-level objectives', () => {
  it('saves an added objective in jsonData.slos, next to the other settings', async () => {
    const { user, last } = await setup(settings({ scrapeInterval: '30s' }));
    await user.click(screen.getByTestId(ids.sloAdd));
    expect(last()?.jsonData).toEqual({
      scrapeInterval: '30s',
      slos: [{ name: 'objective-1', indicator: 'ttft', threshold: 2, objective: 0.99, window: '28d' }],
    });
  });

  it('removing the last objective removes the setting', async () => {
    const slos = [{ name: 'up', indicator: 'availability' as const, objective: 0.999, window: '7d' }];
    const { user, last } = await setup(settings({ slos }));
    await user.click(screen.getByTestId(ids.sloRemove(0)));
    expect(last()?.jsonData).toEqual({});
  });
});
