import { InlineField, Input } from '@grafana/ui';
import { useState } from 'react';

interface Props {
  label?: string;
  tooltip?: string;
  labelWidth?: number;
  width?: number;
  value: string | undefined;
  placeholder?: string;
  testId: string;
  validate: (value: string) => string | undefined;
  /** Called on blur with the trimmed text, and only when it passes validation. */
  onCommit: (value: string) => void;
}

/**
 * A text field that shows its validation error inline while the user types and hands on only
 * valid values, so that a half-typed or wrong value never reaches the saved query or settings.
 */
export function ValidatedInput({
  label,
  tooltip,
  labelWidth,
  width,
  value,
  placeholder,
  testId,
  validate,
  onCommit,
}: Props) {
  const [text, setText] = useState(value ?? '');
  const [shown, setShown] = useState(value);
  if (value !== shown) {
    // The saved value changed from outside (another field, a reset): show it.
    setShown(value);
    setText(value ?? '');
  }
  const error = validate(text);
  return (
    <InlineField label={label} tooltip={tooltip} labelWidth={labelWidth} invalid={error !== undefined} error={error}>
      <Input
        data-testid={testId}
        width={width}
        value={text}
        placeholder={placeholder}
        onChange={(e) => setText(e.currentTarget.value)}
        onBlur={() => {
          const v = text.trim();
          if (validate(v) === undefined && v !== (value ?? '')) {
            onCommit(v);
          }
        }}
      />
    </InlineField>
  );
}
