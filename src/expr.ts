import { type QueryType, type VllmQuery } from './types';

/**
 * Reads the one-line text form that Grafana's trace-to-metrics links and correlations send
 * (`explain <traceId>`, `signals a,b`, `diagnosis`) into the structured query fields, so that
 * the editor shows such a query as what it is. Unknown text gives an empty result. The backend
 * (pkg/plugin/query.go) reads it the same way: both are tested on pkg/plugin/testdata/expr_cases.json.
 */
export function parseExpr(expr: string | undefined): Partial<VllmQuery> {
  const [head = '', ...rest] = (expr ?? '').trim().split(/\s+/);
  const arg = rest.join(' ');
  const list = arg
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  switch (head.toLowerCase() as QueryType) {
    case 'explain':
      // Without a trace id it is not a text form: the backend rejects it, and so does the editor.
      return arg ? { queryType: 'explain', traceId: arg } : {};
    case 'signals':
      return { queryType: 'signals', signals: list };
    case 'diagnosis':
      return { queryType: 'diagnosis', rules: list };
    default:
      return {};
  }
}

/**
 * The query as the editor sees it: a query that has only the text form gets the structured fields
 * that the text stands for; a structured query is returned as it is.
 */
export function structuredQuery(query: VllmQuery): VllmQuery {
  if (query.queryType || !query.expr) {
    return query;
  }
  const parsed = parseExpr(query.expr);
  if (!parsed.queryType) {
    return query;
  }
  const { expr: _expr, ...rest } = query;
  return { ...rest, ...parsed };
}
