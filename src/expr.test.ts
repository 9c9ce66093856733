import { parseExpr, structuredQuery } from './expr';

describe('parseExpr', () => {
  it.each([
    ['explain with a trace id', 'explain 4bf92f35', { queryType: 'explain', traceId: '4bf92f35' }],
    [
      'signals with a comma list',
      'signals ttft_p99, kv_usage',
      { queryType: 'signals', signals: ['ttft_p99', 'kv_usage'] },
    ],
    ['diagnosis alone', 'diagnosis', { queryType: 'diagnosis' }],
    [
      'diagnosis with rules',
      'diagnosis kv_cache_saturated,prefill_blocking',
      { queryType: 'diagnosis', rules: ['kv_cache_saturated', 'prefill_blocking'] },
    ],
    ['surrounding blanks', '  explain   abc  ', { queryType: 'explain', traceId: 'abc' }],
    ['an unknown word', 'rate(x[5m])', {}],
    ['nothing', undefined, {}],
  ])('reads %s', (_name, expr, want) => {
    expect(parseExpr(expr)).toEqual(want);
  });
});

describe('structuredQuery', () => {
  it('turns a text-form query into the structured query it stands for', () => {
    expect(structuredQuery({ refId: 'A', expr: 'explain abc' })).toEqual({
      refId: 'A',
      queryType: 'explain',
      traceId: 'abc',
    });
  });

  it('leaves a structured query as it is, text form included', () => {
    const q = { refId: 'A', queryType: 'signals' as const, signals: ['kv_usage'], expr: 'explain abc' };
    expect(structuredQuery(q)).toBe(q);
  });

  it('leaves a text form it does not know as it is', () => {
    const q = { refId: 'A', expr: 'something else' };
    expect(structuredQuery(q)).toBe(q);
  });
});
