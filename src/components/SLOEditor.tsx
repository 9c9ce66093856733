import { type SelectableValue } from '@grafana/data';
import { ConfigSubSection } from '@grafana/plugin-ui';
import { Button, FieldValidationMessage, IconButton, InlineField, InlineFieldRow, Select } from '@grafana/ui';

import { selectors } from '../selectors';
import {
  isLatency,
  validateIndicator,
  validateModel,
  validateName,
  validateObjectiveValue,
  validateSLOs,
  validateThreshold,
  validateWindow,
} from '../slo';
import { INDICATORS, type Indicator, type SLOSpec } from '../types';
import { parseNumber } from '../validation';
import { ValidatedInput } from './ValidatedInput';

const ids = selectors.configEditor;
const LABEL_WIDTH = 26;

/** How the page names each indicator; one the backend adds fails the typecheck until it has one. */
const INDICATOR_LABELS: Record<Indicator, { label: string; description: string }> = {
  ttft: { label: 'Time to first token', description: 'seconds' },
  tpot: { label: 'Time per output token', description: "a request's mean, seconds" },
  itl: { label: 'Inter-token latency', description: 'between two output tokens, seconds' },
  e2e: { label: 'End-to-end latency', description: 'seconds' },
  availability: { label: 'Availability', description: 'finished without abort or error' },
};

const INDICATOR_OPTIONS: Array<SelectableValue<Indicator>> = INDICATORS.map((value) => ({
  value,
  ...INDICATOR_LABELS[value],
}));

/** A new objective: the example the backend's messages give, under a name no other objective has. */
function newObjective(existing: SLOSpec[]): SLOSpec {
  const names = new Set(existing.map((o) => o.name));
  let n = existing.length + 1;
  while (names.has(`objective-${n}`)) {
    n++;
  }
  return { name: `objective-${n}`, indicator: 'ttft', threshold: 2, objective: 0.99, window: '28d' };
}

/** A number typed in a field, checked by the objective's rule for it; empty is 0, as the backend reads it. */
function numberCheck(field: string, rule: (n: number) => string | undefined) {
  return (text: string) => {
    const n = text.trim() === '' ? 0 : parseNumber(text);
    return n === undefined ? `${field} ${JSON.stringify(text)} is not a number` : rule(n);
  };
}

const objectiveCheck = numberCheck('objective', validateObjectiveValue);

/** The fields of an objective typed as text; NUMBER_FIELDS of them are numbers. */
type TextFieldName = 'name' | 'threshold' | 'objective' | 'window' | 'model';

const NUMBER_FIELDS: ReadonlySet<TextFieldName> = new Set(['threshold', 'objective']);

const TEXT_FIELDS: Record<TextFieldName, { label: string; tooltip: string; placeholder?: string }> = {
  name: { label: 'Name', tooltip: 'Unique among the objectives: queries, panels and provisioning name it' },
  threshold: { label: 'Threshold (s)', tooltip: 'A request is good at or under this latency, in seconds' },
  objective: { label: 'Objective', tooltip: 'The share of good requests asked for, such as 0.99' },
  window: { label: 'Window', tooltip: "The error budget's period, such as 28d or 7d" },
  model: {
    label: 'Model',
    tooltip: 'A model name or a regular expression matching whole names; empty for every model',
    placeholder: 'every model',
  },
};

interface FieldProps {
  index: number;
  objective: SLOSpec;
  field: TextFieldName;
  validate: (text: string) => string | undefined;
  update: (index: number, patch: Partial<SLOSpec>) => void;
}

/** One text field of an objective: it shows the saved value and hands on a typed one its rule accepts. */
function ObjectiveField({ index, objective, field, validate, update }: FieldProps) {
  const value = objective[field];
  return (
    <ValidatedInput
      {...TEXT_FIELDS[field]}
      labelWidth={LABEL_WIDTH}
      width={30}
      testId={ids.sloField(index, field)}
      value={value === undefined ? '' : String(value)}
      validate={validate}
      onCommit={(v) => update(index, { [field]: NUMBER_FIELDS.has(field) ? parseNumber(v) : v })}
    />
  );
}

interface Props {
  /** jsonData.slos as saved: it may hold what the backend refuses, which is shown, not dropped. */
  slos: unknown;
  onChange: (slos: SLOSpec[] | undefined) => void;
}

/**
 * The service-level objectives of the settings (jsonData.slos): add, edit and remove them. Each
 * field hands on only a value its rule accepts, and shows the message of a bad one, saved or typed.
 */
export function SLOEditor({ slos, onChange }: Props) {
  const list = Array.isArray(slos) ? (slos as SLOSpec[]) : [];
  // Messages no field shows: the list itself, or an objective that is not one.
  const problems = validateSLOs(slos).filter((p) => p.field === undefined);

  const set = (next: SLOSpec[]) => onChange(next.length ? next : undefined);
  const update = (index: number, patch: Partial<SLOSpec>) => {
    const o: SLOSpec = { ...list[index], ...patch };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined || v === '') {
        delete o[k as keyof SLOSpec];
      }
    }
    set(list.map((x, i) => (i === index ? o : x)));
  };

  return (
    <div data-testid={ids.slos}>
      {problems.map((p) => (
        <FieldValidationMessage key={p.message}>{p.message}</FieldValidationMessage>
      ))}
      {list.map((o, index) => {
        if (typeof o !== 'object' || o === null) {
          return (
            <IconButton
              key={index}
              name="trash-alt"
              aria-label={`Remove objective ${index + 1}`}
              data-testid={ids.sloRemove(index)}
              onClick={() => set(list.filter((_, i) => i !== index))}
            />
          );
        }
        const others = list.filter((_, i) => i !== index).map((x) => String(x?.name ?? '').trim());
        const indicatorError = validateIndicator(String(o.indicator));
        const textField = (field: TextFieldName, validate: FieldProps['validate']) => (
          <ObjectiveField index={index} objective={o} field={field} validate={validate} update={update} />
        );
        const thresholdCheck = numberCheck('threshold', (n) => validateThreshold(o.indicator, n));
        return (
          <div key={`${index}-${o.name}`} data-testid={ids.slo(index)}>
            <ConfigSubSection title={o.name || `Objective ${index + 1}`}>
              <InlineFieldRow>
                {textField('name', (v) => validateName(v, others))}
                <IconButton
                  name="trash-alt"
                  aria-label={`Remove objective ${o.name}`}
                  data-testid={ids.sloRemove(index)}
                  onClick={() => set(list.filter((_, i) => i !== index))}
                />
              </InlineFieldRow>
              <InlineFieldRow>
                <div data-testid={ids.sloField(index, 'indicator')}>
                  <InlineField
                    label="Indicator"
                    labelWidth={LABEL_WIDTH}
                    invalid={indicatorError !== undefined}
                    error={indicatorError}
                  >
                    <Select
                      width={30}
                      options={INDICATOR_OPTIONS}
                      value={o.indicator}
                      onChange={(v) =>
                        update(index, {
                          indicator: v.value,
                          // Availability has no threshold; a latency keeps the one it had.
                          threshold: v.value && isLatency(v.value) ? o.threshold : undefined,
                        })
                      }
                    />
                  </InlineField>
                </div>
              </InlineFieldRow>
              {indicatorError === undefined && isLatency(o.indicator) && (
                <InlineFieldRow>{textField('threshold', thresholdCheck)}</InlineFieldRow>
              )}
              <InlineFieldRow>{textField('objective', objectiveCheck)}</InlineFieldRow>
              <InlineFieldRow>{textField('window', validateWindow)}</InlineFieldRow>
              <InlineFieldRow>{textField('model', validateModel)}</InlineFieldRow>
            </ConfigSubSection>
          </div>
        );
      })}
      {/* Over a saved value that is not a list, the first objective added starts a new list. */}
      <Button
        variant="secondary"
        icon="plus"
        data-testid={ids.sloAdd}
        onClick={() => set([...list, newObjective(list)])}
      >
        Add objective
      </Button>
    </div>
  );
}
