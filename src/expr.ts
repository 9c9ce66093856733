import { type QueryType, type VllmQuery } from './types';

/**
 * Reads the one-line text form that Grafana's trace-to-metrics links and correlations send
 * (`explain <traceId>`, `signals a,b`, `diagnosis`) into the structured query fields, so that
 * the editor shows such a query as what it is. Unknown text gives an empty result.
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
      return { queryType: 'explain', traceId: arg };
    case 'signals':
      return { queryType: 'signals', signals: list };
    case 'diagnosis':
      return list.length > 0 ? { queryType: 'diagnosis', rules: list } : { queryType: 'diagnosis' };
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
