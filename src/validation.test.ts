import {
  isTemplateVariable,
  parseNumber,
  validateScrapeInterval,
  validateHttpUrl,
  validateTime,
  validateTraceId,
} from './validation';

describe('validateTraceId', () => {
  it.each([
    ['a 32-digit trace id', '4bf92f3577b34da6a3ce929d0e0e4736'],
    ['a short hex id', 'abc123'],
    ['upper-case hex', 'ABCDEF'],
    ['a braced variable', '${traceId}'],
    ['a bare variable', '$trace'],
    ['an empty field', ''],
  ])('accepts %s', (_name, value) => {
    expect(validateTraceId(value)).toBeUndefined();
  });

  it.each([
    ['33 hex digits', '4bf92f3577b34da6a3ce929d0e0e47361'],
    ['a non-hex character', 'xyz'],
    ['a dashed uuid', '4bf92f35-77b3-4da6-a3ce-929d0e0e4736'],
    ['text around a variable', 'id-${traceId}'],
  ])('rejects %s', (_name, value) => {
    expect(validateTraceId(value)).toMatch(/hexadecimal/);
  });
});

describe('validateTime', () => {
  it.each([
    ['a relative day', 'now-7d'],
    ['now itself', 'now'],
    ['a rounded relative time', 'now-1d/d'],
    ['a compound relative time', 'now-1d-2h'],
    ['RFC 3339 in UTC', '2026-05-01T10:00:00Z'],
    ['RFC 3339 with an offset and fraction', '2026-05-01T10:00:00.123+02:00'],
    ['a variable', '${baseline}'],
    ['an empty field', ''],
  ])('accepts %s', (_name, value) => {
    expect(validateTime(value)).toBeUndefined();
  });

  it.each([
    ['words', 'last week'],
    ['a relative time without a unit', 'now-7'],
    ['a date without a time', '2026-05-01'],
    ['an impossible date', '2026-13-45T10:00:00Z'],
  ])('rejects %s', (_name, value) => {
    expect(validateTime(value)).toMatch(/RFC 3339/);
  });
});

describe('validateScrapeInterval', () => {
  it.each(['15s', '1m', '1m30s', '1s', '1500ms', ''])('accepts %p', (value) => {
    expect(validateScrapeInterval(value)).toBeUndefined();
  });

  it.each(['15', 'fast', '-1m', '1.5m', '1d', '2w'])('rejects %p as not a duration', (value) => {
    expect(validateScrapeInterval(value)).toMatch(/duration such as/);
  });

  it.each(['0s', '500ms', '999ms'])('rejects %p as under 1s', (value) => {
    expect(validateScrapeInterval(value)).toMatch(/1s or more/);
  });
});

describe('validateHttpUrl', () => {
  it.each(['http://tempo:3200', 'https://jaeger.example.com/jaeger', ''])('accepts %p', (value) => {
    expect(validateHttpUrl(value)).toBeUndefined();
  });

  it.each(['tempo:3200', 'ftp://tempo', 'http://', 'not a url'])('rejects %p', (value) => {
    expect(validateHttpUrl(value)).toMatch(/http/);
  });
});

describe('parseNumber', () => {
  it.each([
    ['0.85', 0.85],
    [' 2 ', 2],
    ['-1', -1],
    ['1e-3', 0.001],
    ['.5', 0.5],
  ])('reads %p as %p', (text, want) => {
    expect(parseNumber(text)).toBe(want);
  });

  it.each(['', 'high', '1,5', '0x10', 'Infinity', '1e999'])('refuses %p', (text) => {
    expect(parseNumber(text)).toBeUndefined();
  });
});

describe('isTemplateVariable', () => {
  it.each([
    ['$instance', true],
    ['${instance:regex}', true],
    ['[[instance]]', true],
    ['instance', false],
    ['$instance-1', false],
  ])('%p → %p', (value, want) => {
    expect(isTemplateVariable(value)).toBe(want);
  });
});
