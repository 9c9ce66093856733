import badObjectives from '../pkg/slo/testdata/bad-objectives.json';
import { validateSLOs } from './slo';

// The table of bad objectives pkg/slo's TestParseNamesTheBadValue reads too: the backend's
// Parse and this validation must say the same of each.
const table: { cases: Array<{ name: string; slos: unknown; says: string[] }> } = badObjectives;

describe('validateSLOs', () => {
  it('reads the shared table', () => {
    expect(table.cases.length).toBeGreaterThan(0);
  });

  it.each(table.cases.map((c) => [c.name, c] as const))('%s: a message says what the backend says', (_, c) => {
    const messages = validateSLOs(c.slos).map((p) => p.message);
    expect(messages.some((m) => c.says.every((s) => m.includes(s)))).toBe(true);
  });

  it.each([
    ['absent', undefined],
    ['null', null],
    ['empty', []],
    [
      'good objectives',
      [
        { name: 'ttft-2s', indicator: 'ttft', threshold: 2, objective: 0.99, window: '28d', model: 'llama-.*' },
        { name: 'up', indicator: 'availability', objective: 0.999, window: '1w2d' },
      ],
    ],
  ])('%s: no message', (_, slos) => {
    expect(validateSLOs(slos)).toEqual([]);
  });

  it('gives one message per bad value, each on its field', () => {
    const problems = validateSLOs([
      { name: 'x', indicator: 'ttft', threshold: -1, objective: 2, window: 'a month', model: 'llama-(' },
    ]);
    expect(problems.map((p) => p.field)).toEqual(['threshold', 'objective', 'window', 'model']);
    expect(problems.every((p) => p.index === 0 && p.message.startsWith('slos[0] "x": '))).toBe(true);
  });
});
