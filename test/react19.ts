/**
 * What React 19 removed from React and ReactDOM (React's "React 19 upgrade guide"), as each appears
 * in source: code that uses one works on Grafana 12's React 18 and breaks on Grafana 13.2's React 19.
 */
export const REMOVED_IN_REACT_19: ReadonlyArray<{ what: string; pattern: RegExp }> = [
  { what: 'defaultProps (ignored on function components)', pattern: /\bdefaultProps\b/ },
  { what: 'propTypes (no longer checked)', pattern: /\bpropTypes\b/ },
  {
    what: 'legacy context (contextTypes, childContextTypes, getChildContext)',
    pattern: /\b(contextTypes|childContextTypes|getChildContext)\b/,
  },
  { what: 'string refs', pattern: /\bref\s*(=\s*\{?\s*|:\s*)["'`]/ },
  {
    what: 'ReactDOM.render, hydrate, unmountComponentAtNode (use react-dom/client)',
    pattern:
      /\bReactDOM\.(render|hydrate)\b|\bunmountComponentAtNode\b|import\s*\{[^}]*\b(render|hydrate)\b[^}]*\}\s*from\s*["']react-dom["']/i,
  },
  { what: 'findDOMNode', pattern: /\bfindDOMNode\b/ },
  { what: 'createFactory', pattern: /\bcreateFactory\b/ },
  { what: 'react-dom/test-utils', pattern: /["']react-dom\/test-utils["']/ },
];

/** The removed APIs that `source` uses, by name. */
export function removedApis(source: string): string[] {
  return REMOVED_IN_REACT_19.filter(({ pattern }) => pattern.test(source)).map(({ what }) => what);
}
