import { screen, within } from '@testing-library/react';
import { type UserEvent } from '@testing-library/user-event';

/** Escapes the characters that user-event reads as key descriptors, so that text is typed as is. */
export function literal(text: string): string {
  return text.replace(/[{[]/g, '$&$&');
}

/** Opens the @grafana/ui select with this data-testid. */
export async function openSelect(user: UserEvent, testId: string) {
  await user.click(within(screen.getByTestId(testId)).getByRole('combobox'));
}

/** Chooses the option with this label in the select with this data-testid. */
export async function chooseOption(user: UserEvent, testId: string, label: string) {
  await openSelect(user, testId);
  await user.click(await screen.findByText(label, { selector: '[role="option"] *, [role="option"]' }));
}

/** Types a value that is not among the options into the select with this data-testid. */
export async function typeCustomValue(user: UserEvent, testId: string, text: string) {
  const input = within(screen.getByTestId(testId)).getByRole('combobox');
  await user.click(input);
  await user.type(input, `${literal(text)}{Enter}`);
}

/** Replaces the text of the input with this data-testid and leaves it, as a user does. */
export async function typeAndLeave(user: UserEvent, testId: string, text: string) {
  const input = screen.getByTestId(testId);
  await user.clear(input);
  if (text !== '') {
    await user.type(input, literal(text));
  }
  await user.tab();
}
