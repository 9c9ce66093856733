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
        return (
          <div key={`${index}-${o.name}`} data-testid={ids.slo(index)}>
            <ConfigSubSection title={o.name || `Objective ${index + 1}`}>
              <InlineFieldRow>
                <ValidatedInput
                  label="Name"
                  labelWidth={LABEL_WIDTH}
                  width={30}
                  tooltip="Unique among the objectives: queries, panels and provisioning name it"
                  testId={ids.sloField(index, 'name')}
                  value={o.name}
                  validate={(v) => validateName(v, others)}
                  onCommit={(name) => update(index, { name })}
                />
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
                <InlineFieldRow>
                  <ValidatedInput
                    label="Threshold (s)"
                    labelWidth={LABEL_WIDTH}
                    width={30}
                    tooltip="A request is good at or under this latency, in seconds"
                    testId={ids.sloField(index, 'threshold')}
                    value={o.threshold === undefined ? '' : String(o.threshold)}
                    validate={numberCheck('threshold', (n) => validateThreshold(o.indicator, n))}
                    onCommit={(v) => update(index, { threshold: parseNumber(v) })}
                  />
                </InlineFieldRow>
              )}
              <InlineFieldRow>
                <ValidatedInput
                  label="Objective"
                  labelWidth={LABEL_WIDTH}
                  width={30}
                  tooltip="The share of good requests asked for, such as 0.99"
                  testId={ids.sloField(index, 'objective')}
                  value={o.objective === undefined ? '' : String(o.objective)}
                  validate={numberCheck('objective', validateObjectiveValue)}
                  onCommit={(v) => update(index, { objective: parseNumber(v) })}
                />
              </InlineFieldRow>
              <InlineFieldRow>
                <ValidatedInput
                  label="Window"
                  labelWidth={LABEL_WIDTH}
                  width={30}
                  tooltip="The error budget's period, such as 28d or 7d"
                  testId={ids.sloField(index, 'window')}
                  value={o.window}
                  validate={validateWindow}
                  onCommit={(window) => update(index, { window })}
                />
              </InlineFieldRow>
              <InlineFieldRow>
                <ValidatedInput
                  label="Model"
                  labelWidth={LABEL_WIDTH}
                  width={30}
                  tooltip="A model name or a regular expression matching whole names; empty for every model"
                  placeholder="every model"
                  testId={ids.sloField(index, 'model')}
                  value={o.model}
                  validate={validateModel}
                  onCommit={(model) => update(index, { model })}
                />
              </InlineFieldRow>
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
