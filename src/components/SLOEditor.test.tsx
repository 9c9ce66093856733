import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';

import { selectors } from '../selectors';
import { type SLOSpec } from '../types';
import { SLOEditor } from './SLOEditor';
import { chooseOption, typeAndLeave } from './userActions';

const ids = selectors.configEditor;

const TTFT: SLOSpec = { name: 'ttft-1s', indicator: 'ttft', threshold: 1, objective: 0.99, window: '28d' };
const UP: SLOSpec = { name: 'availability', indicator: 'availability', objective: 0.999, window: '7d' };

/** Renders the editor as the config page does: each change comes back as the saved value. */
function setup(initial: unknown) {
  const onChange = jest.fn<void, [SLOSpec[] | undefined]>();
  function Harness() {
    const [slos, setSlos] = useState<unknown>(initial);
    return (
      <SLOEditor
        slos={slos}
        onChange={(next) => {
          onChange(next);
          setSlos(next);
        }}
      />
    );
  }
  render(<Harness />);
  const last = () => onChange.mock.calls[onChange.mock.calls.length - 1]?.[0];
  return { user: userEvent.setup(), onChange, last };
}

describe('SLOEditor', () => {
  it('adds an objective the backend accepts, under a new name', async () => {
    const { user, last } = setup([{ ...TTFT, name: 'objective-2' }]);
    await user.click(screen.getByTestId(ids.sloAdd));
    expect(last()).toEqual([
      { ...TTFT, name: 'objective-2' },
      { name: 'objective-3', indicator: 'ttft', threshold: 2, objective: 0.99, window: '28d' },
    ]);
  });

  it('removes an objective, and the setting with the last one', async () => {
    const { user, last } = setup([TTFT, UP]);
    await user.click(screen.getByTestId(ids.sloRemove(0)));
    expect(last()).toEqual([UP]);
    await user.click(screen.getByTestId(ids.sloRemove(0)));
    expect(last()).toBeUndefined();
  });

  it.each([
    ['name', 'ttft-2s', { name: 'ttft-2s' }],
    ['threshold', '1.5', { threshold: 1.5 }],
    ['objective', '0.95', { objective: 0.95 }],
    ['window', '7d', { window: '7d' }],
    ['model', 'llama-.*', { model: 'llama-.*' }],
  ])('saves a good %s', async (field, text, patch) => {
    const { user, last } = setup([TTFT]);
    await typeAndLeave(user, ids.sloField(0, field), text);
    expect(last()).toEqual([{ ...TTFT, ...patch }]);
  });

  it.each([
    ['name', '', 'name is empty'],
    ['threshold', '0', 'threshold 0 is not a positive number of seconds'],
    ['threshold', 'fast', 'threshold "fast" is not a number'],
    ['objective', '99', 'objective 99 is not a fraction between 0 and 1'],
    ['window', 'a month', 'window "a month" is not a positive duration'],
    ['model', 'llama-(', 'model "llama-(" is neither a model name nor a valid regular expression'],
  ])('refuses a bad %s (%s) with its message', async (field, text, message) => {
    const { user, onChange } = setup([TTFT]);
    await typeAndLeave(user, ids.sloField(0, field), text);
    expect(screen.getByText(message, { exact: false })).toBeInTheDocument();
    expect(onChange).not.toHaveBeenCalled();
  });

  it('asks for a threshold when a latency indicator replaces availability', async () => {
    const { user, last } = setup([UP]);
    await chooseOption(user, ids.sloField(0, 'indicator'), 'End-to-end latency');
    expect(last()).toEqual([{ ...UP, indicator: 'e2e' }]);
    expect(screen.getByText('threshold 0 is not a positive number of seconds', { exact: false })).toBeInTheDocument();
    await typeAndLeave(user, ids.sloField(0, 'threshold'), '30');
    expect(last()).toEqual([{ ...UP, indicator: 'e2e', threshold: 30 }]);
  });

  it('refuses the name of another objective', async () => {
    const { user, onChange } = setup([TTFT, UP]);
    await typeAndLeave(user, ids.sloField(1, 'name'), 'ttft-1s');
    expect(screen.getByText('the name is used by an earlier objective', { exact: false })).toBeInTheDocument();
    expect(onChange).not.toHaveBeenCalled();
  });

  it('hides the threshold of availability and drops it', async () => {
    const { user, last } = setup([TTFT]);
    await chooseOption(user, ids.sloField(0, 'indicator'), 'Availability');
    expect(last()).toEqual([{ name: 'ttft-1s', indicator: 'availability', objective: 0.99, window: '28d' }]);
    expect(screen.queryByTestId(ids.sloField(0, 'threshold'))).not.toBeInTheDocument();
  });

  it('shows a message for each bad value of saved objectives', () => {
    setup([
      { name: 'x', indicator: 'ttft', threshold: -1, objective: 2, window: 'a month' },
      { ...UP, indicator: 'latency' },
    ]);
    const first = within(screen.getByTestId(ids.slo(0)));
    for (const m of ['threshold -1 is not a positive', 'objective 2 is not a fraction', 'window "a month"']) {
      expect(first.getByText(m, { exact: false })).toBeInTheDocument();
    }
    expect(
      within(screen.getByTestId(ids.slo(1))).getByText('indicator "latency" is not one of', { exact: false })
    ).toBeInTheDocument();
  });

  it.each([
    ['a saved value that is not a list', { name: 'x' }, 'slos is not a list of objectives'],
    ['an objective that is not one', [3], 'slos[0] is not an objective'],
  ])('says what is wrong with %s', (_, slos, message) => {
    setup(slos);
    expect(screen.getByText(message, { exact: false })).toBeInTheDocument();
  });
});
