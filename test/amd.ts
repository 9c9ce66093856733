/**
 * Evaluates dist/module.js the way Grafana's plugin loader does: the bundle is one AMD module,
 * `define([names], factory)`, and Grafana calls the factory with its own copy of each named module.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const DIST = path.join(__dirname, '..', 'dist');

/**
 * The modules Grafana's loader shares with plugins (sharedDependenciesMap in Grafana's
 * public/app/features/plugins/loader/sharedDependencies.ts, less jQuery's plugins and the legacy
 * app/* paths): a name outside it fails to load in Grafana. react/jsx-runtime and
 * react/jsx-dev-runtime are in it from Grafana 12.0.10, 12.1.7, 12.2.5 and 12.3.0 on.
 */
export const GRAFANA_SHARED = new Set([
  '@emotion/css',
  '@emotion/react',
  '@grafana/data',
  '@grafana/data/unstable',
  '@grafana/runtime',
  '@grafana/runtime/unstable',
  '@grafana/slate-react',
  '@grafana/ui',
  '@grafana/ui/unstable',
  'd3',
  'emotion',
  'i18next',
  'jquery',
  'lodash',
  'moment',
  'prismjs',
  'react',
  'react/jsx-runtime',
  'react/jsx-dev-runtime',
  'react-dom',
  'react-dom/client',
  'react-dom/server',
  'react-inlinesvg',
  'react-redux',
  'react-router',
  'react-router-dom',
  'redux',
  'rxjs',
  'rxjs/operators',
  'slate',
  'slate-plain-serializer',
  'slate-react',
]);

export function readBundle(): string {
  const file = path.join(DIST, 'module.js');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}; run \`npm run build\` first`);
  }
}

export interface AmdModule {
  /** The module names the bundle asks the loader for, in its order. */
  deps: string[];
  /** What the factory returned: the bundle's exports. */
  exports: Record<string, unknown>;
}

/**
 * Runs the bundle's source with a `define` that resolves each dependency through `provide`; a name
 * Grafana does not share fails here, with the name, as it would in Grafana.
 */
export function evaluateAmd(source: string, provide: (name: string) => unknown): AmdModule {
  let loaded: AmdModule | undefined;
  const define = (deps: string[], factory: (...modules: unknown[]) => Record<string, unknown>) => {
    const unshared = deps.filter((d) => !GRAFANA_SHARED.has(d));
    if (unshared.length > 0) {
      throw new Error(`module.js asks for ${unshared.join(', ')}, which Grafana does not share with plugins`);
    }
    loaded = { deps, exports: factory(...deps.map(provide)) };
  };
  define.amd = {};
  new Function('define', source)(define);
  if (!loaded) {
    throw new Error('module.js did not call define: it is not an AMD module');
  }
  return loaded;
}
