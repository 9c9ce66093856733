/**
 * What the built dist/module.js holds: none of the modules Grafana shares (React above all: a
 * bundled copy, or its JSX runtime, is tied to the React it came from), and, like src/, none of
 * the APIs React 19 removed. The bundled modules are read from the source map, which names each
 * one and keeps its original text; the externals are not in it, since Grafana provides them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { DIST, GRAFANA_SHARED, readBundle } from './amd';
import { removedApis } from './react19';

const SRC = path.join(__dirname, '..', 'src');

interface SourceMap {
  sources: string[];
  sourcesContent?: Array<string | null>;
}

/** The bundled modules of module.js: path (as webpack names it) and original text. */
function bundledModules(): Array<[string, string]> {
  const map = JSON.parse(readFileSync(path.join(DIST, 'module.js.map'), 'utf8')) as SourceMap;
  return map.sources
    .map((source, i): [string, string | null | undefined] => [source, map.sourcesContent?.[i]])
    .filter(([source]) => !/\/(external [a-z]+ |webpack\/)/.test(source))
    .map(([source, text]) => {
      if (typeof text !== 'string') {
        throw new Error(`module.js.map has no text for ${source}: the build must keep sourcesContent`);
      }
      return [source, text];
    });
}

/** The npm package a bundled module comes from ("@grafana/plugin-ui", "react"), or undefined for src/. */
function packageOf(source: string): string | undefined {
  return source.match(/node_modules\/((@[^/]+\/)?[^/]+)\//)?.[1];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name));
}

describe('removedApis', () => {
  it.each([
    ['defaultProps on a function component', 'Panel.defaultProps = { width: 10 };'],
    ['propTypes', 'Panel.propTypes = { width: PropTypes.number };'],
    ['legacy context', 'static contextTypes = { theme: PropTypes.object };'],
    ['a string ref in JSX', '<input ref="name" />'],
    ['a string ref in createElement', 'React.createElement("input", { ref: "name" })'],
    ['ReactDOM.render', 'ReactDOM.render(<App />, el);'],
    ['render imported from react-dom', "import { render } from 'react-dom';"],
    ['unmountComponentAtNode', 'unmountComponentAtNode(el);'],
    ['findDOMNode', 'const node = ReactDOM.findDOMNode(this);'],
    ['createFactory', 'const div = React.createFactory("div");'],
    ['react-dom/test-utils', "import { act } from 'react-dom/test-utils';"],
  ])('finds %s', (_name, source) => {
    expect(removedApis(source)).toHaveLength(1);
  });

  it.each([
    ['a ref object', '<input ref={inputRef} />'],
    ['a callback ref', '<input ref={(el) => setNode(el)} />'],
    ['createRoot', "import { createRoot } from 'react-dom/client'; createRoot(el).render(<App />);"],
    ['forwardRef and useRef', 'const Input = forwardRef((props, ref) => { const r = useRef(null); });'],
    ['render from the testing library', "import { render } from '@testing-library/react';"],
  ])('leaves %s alone', (_name, source) => {
    expect(removedApis(source)).toEqual([]);
  });
});

describe('module.js', () => {
  it('has a source map that names its bundled modules', () => {
    expect(bundledModules().map(([source]) => source)).toContain('webpack://seed-vllm-datasource/./module.ts');
  });

  it('bundles none of the modules Grafana shares', () => {
    const shared = new Set([...GRAFANA_SHARED].map((name) => packageOf(`node_modules/${name}/`)));
    const bundled = bundledModules()
      .map(([source]) => source)
      .filter((source) => shared.has(packageOf(source)));
    expect(bundled).toEqual([]);
  });

  it.each(['__SECRET_INTERNALS', 'ReactCurrentOwner', '__CLIENT_INTERNALS'])(
    'holds no React internals (%s)',
    (name) => {
      expect(readBundle()).not.toContain(name);
    }
  );

  it('uses none of the APIs React 19 removed', () => {
    const found = bundledModules().flatMap(([source, text]) => removedApis(text).map((what) => `${source}: ${what}`));
    expect(found).toEqual([]);
  });
});

describe('src/', () => {
  it('uses none of the APIs React 19 removed', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(0);
    const found = files.flatMap((file) =>
      removedApis(readFileSync(file, 'utf8')).map((what) => `${path.relative(SRC, file)}: ${what}`)
    );
    expect(found).toEqual([]);
  });
});
