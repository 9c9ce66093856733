import exprCases from '../pkg/plugin/testdata/expr_cases.json';
import { parseExpr, structuredQuery } from './expr';

interface ExprCase {
  name: string;
  expr: string;
  valid: boolean;
  queryType?: string;
  traceId?: string;
  signals?: string[];
  rules?: string[];
}

// The table the backend's parser is tested on too (pkg/plugin/expr_cases_test.go).
const table: { cases: ExprCase[] } = exprCases;

describe('parseExpr', () => {
  it.each(table.cases.map((c) => [c.name, c] as const))('reads %s as the backend does', (_name, c) => {
    const { name: _n, expr, valid, ...want } = c;
    expect(parseExpr(expr)).toEqual(valid ? want : {});
  });

  it('reads nothing as no text form', () => {
    expect(parseExpr(undefined)).toEqual({});
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
