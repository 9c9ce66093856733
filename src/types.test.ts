import goDefaults from '../pkg/plugin/testdata/settings_defaults.json';
import { SETTINGS_DEFAULTS } from './types';

// The Go side's defaults, written by `go generate ./pkg/plugin` (pkg/plugin's tests check that the
// file is not stale and that LoadSettings fills in the same).
const backend: Record<string, string> = goDefaults;

// tracesBackend is chosen with buttons, not typed over a placeholder.
const notPlaceholders = ['tracesBackend'];

describe('SETTINGS_DEFAULTS', () => {
  it.each(Object.keys(SETTINGS_DEFAULTS))('shows the backend default of %s', (name) => {
    expect(SETTINGS_DEFAULTS[name]).toBe(backend[name]);
  });

  it('has a placeholder for every typed setting the backend defaults', () => {
    const typed = Object.keys(backend).filter((name) => !notPlaceholders.includes(name));
    expect(Object.keys(SETTINGS_DEFAULTS).sort()).toEqual(typed.sort());
  });
});
