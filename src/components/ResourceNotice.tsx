import { Text } from '@grafana/ui';

interface Props {
  what: string;
  error?: string;
  testId: string;
}

/** Says inline that a list could not be loaded, and that typing a value still works. */
export function ResourceNotice({ what, error, testId }: Props) {
  if (!error) {
    return null;
  }
  return (
    <div data-testid={testId}>
      <Text color="warning" variant="bodySmall">
        Could not load {what}: {error}. You can still type a value.
      </Text>
    </div>
  );
}
