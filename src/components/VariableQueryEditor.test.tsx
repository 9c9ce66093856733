import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { selectors } from '../selectors';
import { dataSourceWith } from '../testUtils';
import { type VllmVariableQuery } from '../types';
import { typeAndLeave } from './userActions';
import { variableQuery, VariableQueryEditor } from './VariableQueryEditor';

const ids = selectors.variableEditor;

function setup(query: VllmVariableQuery | string | undefined) {
  const { ds } = dataSourceWith({});
  const onChange = jest.fn<void, [VllmVariableQuery]>();
  render(
    <VariableQueryEditor
      datasource={ds}
      query={query as VllmVariableQuery}
      onChange={onChange}
      onRunQuery={jest.fn()}
    />
  );
  const last = () => onChange.mock.calls[onChange.mock.calls.length - 1]?.[0];
  return { user: userEvent.setup(), last };
}

describe('variableQuery', () => {
  it.each<[string, VllmVariableQuery | string | undefined, Omit<VllmVariableQuery, 'refId'>]>([
    ['a new variable as instances', undefined, { kind: 'instances' }],
    ['the string form of models', 'models', { kind: 'models' }],
    [
      'a saved query as it is',
      { refId: 'V', kind: 'models', instance: '$instance' },
      { kind: 'models', instance: '$instance' },
    ],
  ])('reads %s', (_name, query, want) => {
    expect(variableQuery(query)).toMatchObject(want);
  });
});

describe('VariableQueryEditor', () => {
  it('lists models instead of instances, keeping each filter on its own label', async () => {
    const { user, last } = setup({ refId: 'V', kind: 'instances', model: 'qwen' });
    await user.click(within(screen.getByTestId(ids.kind)).getByText('Models'));
    expect(last()).toEqual({ refId: 'V', kind: 'models', model: 'qwen' });
  });

  it('narrows instances to a model, which may be a template variable', async () => {
    const { user, last } = setup({ refId: 'V', kind: 'instances' });
    await typeAndLeave(user, ids.model, '$model');
    expect(last()).toEqual({ refId: 'V', kind: 'instances', model: '$model' });
  });

  it('narrows models to an instance regex', async () => {
    const { user, last } = setup({ refId: 'V', kind: 'models' });
    await typeAndLeave(user, ids.instance, 'gpu-.*');
    expect(last()).toEqual({ refId: 'V', kind: 'models', instance: 'gpu-.*' });
  });

  it('narrows anomalous requests to both an instance and a model', async () => {
    const { user, last } = setup({ refId: 'V', kind: 'anomalousRequests', instance: '$instance' });
    await typeAndLeave(user, ids.model, '$model');
    expect(last()).toEqual({ refId: 'V', kind: 'anomalousRequests', instance: '$instance', model: '$model' });
  });

  it('asks nothing more of a trace data source variable', () => {
    setup({ refId: 'V', kind: 'traceDatasource', instance: 'gpu-1' });
    expect(screen.queryByTestId(ids.instance)).not.toBeInTheDocument();
    expect(screen.queryByTestId(ids.model)).not.toBeInTheDocument();
  });

  it('clearing the filter lists every value again', async () => {
    const { user, last } = setup({ refId: 'V', kind: 'models', instance: 'gpu-1' });
    await typeAndLeave(user, ids.instance, '');
    expect(last()).toEqual({ refId: 'V', kind: 'models', instance: undefined });
  });
});
