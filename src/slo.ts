/**
 * The validation of service-level objectives (jsonData.slos) on the config page. It mirrors the
 * backend's (pkg/slo Parse) rule for rule and message for message: both are tested against the
 * one table of bad objectives in pkg/slo/testdata/bad-objectives.json.
 */
import { INDICATORS, type Indicator, type SLOSpec } from './types';

/** The fields of an objective a message can be about. */
export type SLOField = 'name' | 'indicator' | 'threshold' | 'objective' | 'window' | 'model';

/** One bad value of the objectives: which objective (none for the list itself) and field. */
export interface SLOProblem {
  index?: number;
  field?: SLOField;
  message: string;
}

/** Go's %q of a string, as the backend's messages quote values. */
function quote(s: string): string {
  return JSON.stringify(s);
}

export function isLatency(indicator: string): boolean {
  return indicator !== 'availability';
}

export function validateName(name: string, earlier: string[] = []): string | undefined {
  const n = name.trim();
  if (n === '') {
    return 'name is empty: name each objective, such as ttft-2s';
  }
  if (earlier.includes(n)) {
    return 'the name is used by an earlier objective; give each objective its own name';
  }
  return undefined;
}

export function validateIndicator(indicator: string): string | undefined {
  return (INDICATORS as readonly string[]).includes(indicator)
    ? undefined
    : `indicator ${quote(indicator)} is not one of ${INDICATORS.join(', ')}`;
}

/** A threshold is a positive number of seconds for a latency, and left out for availability. */
export function validateThreshold(indicator: Indicator, threshold: number): string | undefined {
  if (isLatency(indicator) && !(threshold > 0 && threshold !== Infinity)) {
    return `threshold ${threshold} is not a positive number of seconds, such as 2`;
  }
  if (!isLatency(indicator) && threshold !== 0) {
    return `threshold ${threshold} does not apply to availability: leave it out`;
  }
  return undefined;
}

export function validateObjectiveValue(objective: number): string | undefined {
  return objective > 0 && objective < 1
    ? undefined
    : `objective ${objective} is not a fraction between 0 and 1 (exclusive), such as 0.99`;
}

// A Prometheus duration (github.com/prometheus/common/model ParseDuration): units largest first.
const PROM_DURATION = /^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$/;

export function validateWindow(window: string): string | undefined {
  const w = window.trim();
  return w !== '' && PROM_DURATION.test(w) && /[1-9]/.test(w)
    ? undefined
    : `window ${quote(window)} is not a positive duration such as 28d or 7d`;
}

// What JavaScript's regular expressions accept and Go's (RE2) refuse: lookaround and
// backreferences.
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k</;

export function validateModel(model: string): string | undefined {
  if (model === '') {
    return undefined;
  }
  let error: string | undefined;
  if (NOT_RE2.test(model)) {
    error = 'lookaround and backreferences are not supported';
  } else {
    try {
      new RegExp(`^(?:${model})$`);
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
  }
  return error === undefined
    ? undefined
    : `model ${quote(model)} is neither a model name nor a valid regular expression: ${error}`;
}

const FIELD_TYPES: Record<SLOField, 'string' | 'number'> = {
  name: 'string',
  indicator: 'string',
  threshold: 'number',
  objective: 'number',
  window: 'string',
  model: 'string',
};

/** The value of each field, or the message that says a field is not of its type. */
function specOf(v: unknown): { spec?: SLOSpec; error?: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return { error: 'it is not an object' };
  }
  const o = v as Record<string, unknown>;
  for (const [field, type] of Object.entries(FIELD_TYPES)) {
    const x = o[field];
    if (x !== undefined && x !== null && (typeof x !== type || (type === 'number' && !Number.isFinite(x)))) {
      return { error: `${field} is not a ${type === 'number' ? 'finite number' : 'string'}` };
    }
  }
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
  const num = (k: string) => (typeof o[k] === 'number' ? (o[k] as number) : 0);
  return {
    spec: {
      name: str('name'),
      indicator: str('indicator') as Indicator,
      threshold: num('threshold'),
      objective: num('objective'),
      window: str('window'),
      model: str('model'),
    },
  };
}

/** Each bad value of one objective, given the names of the objectives before it. */
export function objectiveProblems(spec: SLOSpec, earlier: string[]): Array<{ field: SLOField; message: string }> {
  const out: Array<{ field: SLOField; message: string }> = [];
  const add = (field: SLOField, message: string | undefined) => message && out.push({ field, message });
  add('name', validateName(spec.name, earlier));
  const indicator = validateIndicator(spec.indicator);
  add('indicator', indicator);
  if (indicator === undefined) {
    add('threshold', validateThreshold(spec.indicator, spec.threshold ?? 0));
  }
  add('objective', validateObjectiveValue(spec.objective));
  add('window', validateWindow(spec.window));
  add('model', validateModel(spec.model ?? ''));
  return out;
}

/**
 * Every bad value of jsonData.slos, one message each, worded as the backend's error for it
 * (slos[i] "name": ...). Absent or null is no objectives.
 */
export function validateSLOs(slos: unknown): SLOProblem[] {
  if (slos === undefined || slos === null) {
    return [];
  }
  if (!Array.isArray(slos)) {
    return [
      {
        message:
          'slos is not a list of objectives such as [{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]',
      },
    ];
  }
  const out: SLOProblem[] = [];
  const names: string[] = [];
  slos.forEach((raw, index) => {
    const { spec, error } = specOf(raw);
    if (!spec) {
      out.push({
        index,
        message: `slos[${index}] is not an objective {name, indicator, threshold, objective, window, model}: ${error}`,
      });
      return;
    }
    for (const p of objectiveProblems(spec, names)) {
      out.push({ index, field: p.field, message: `slos[${index}] ${quote(spec.name)}: ${p.message}` });
    }
    names.push(spec.name.trim());
  });
  return out;
}
