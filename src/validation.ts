/**
 * Input checks shared by the editors. Each returns an error message a user can act on, or
 * undefined when the value is acceptable; an empty value is acceptable wherever the backend
 * has a default.
 */

const TEMPLATE_VARIABLE = /^(\$[A-Za-z_]\w*|\$\{[^{}]+\}|\[\[[^[\]]+\]\])$/;

/** Reports whether the whole value is one template variable reference ($var, ${var}, [[var]]). */
export function isTemplateVariable(value: string): boolean {
  return TEMPLATE_VARIABLE.test(value.trim());
}

const TRACE_ID = /^[0-9a-fA-F]{1,32}$/;

export function validateTraceId(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || TRACE_ID.test(v) || isTemplateVariable(v)) {
    return undefined;
  }
  return 'A trace id is 1 to 32 hexadecimal characters (or a template variable such as ${traceId})';
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const RELATIVE_TIME = /^now(\s*[+-]\s*\d+(ms|s|m|h|d|w|M|y))*(\/(s|m|h|d|w|M|y))?$/;

export function validateTime(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || isTemplateVariable(v) || RELATIVE_TIME.test(v)) {
    return undefined;
  }
  if (RFC3339.test(v) && !Number.isNaN(Date.parse(v))) {
    return undefined;
  }
  return 'Use RFC 3339 (2026-05-01T10:00:00Z) or a relative time such as now-7d';
}

/** A Go duration (time.ParseDuration) of whole units, as the backend reads the scrape interval. */
const DURATION = /^(\d+(ms|s|m|h))+$/;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The scrape interval: a duration of at least 1s, since the backend's steps are whole seconds. */
export function validateScrapeInterval(value: string): string | undefined {
  const v = value.trim();
  if (v === '') {
    return undefined;
  }
  if (!DURATION.test(v)) {
    return 'Use a duration such as 15s, 1m or 1m30s';
  }
  let ms = 0;
  for (const [, n, unit] of v.matchAll(/(\d+)(ms|s|m|h)/g)) {
    ms += Number(n) * UNIT_MS[unit];
  }
  if (ms < 1000) {
    return 'Use 1s or more: the scrape interval of the vLLM targets, such as 15s';
  }
  return undefined;
}

export function validateHttpUrl(value: string): string | undefined {
  const v = value.trim();
  if (v === '') {
    return undefined;
  }
  try {
    const url = new URL(v);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '') {
      return undefined;
    }
  } catch {
    // fall through to the message below
  }
  return 'Use an http:// or https:// URL, such as http://tempo:3200';
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Parses a threshold as typed by a user; undefined when it is not a finite number. */
export function parseNumber(value: string): number | undefined {
  const v = value.trim();
  if (!NUMBER.test(v)) {
    return undefined;
  }
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}
