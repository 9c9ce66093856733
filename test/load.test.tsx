/**
 * The built dist/module.js loads and its editors render with the React this project runs under:
 * React 18 (Grafana 12) or React 19 (Grafana 13.2 and later), chosen by jest.bundle.config.js.
 * Grafana provides every module the bundle names; here they are the installed packages.
 */
import {
  DataSourcePlugin,
  type DataSourceApi,
  type DataSourcePluginOptionsEditorProps,
  type QueryEditorProps,
} from '@grafana/data';
import { DataSourceWithBackend, setBackendSrv, setTemplateSrv, type BackendSrv } from '@grafana/runtime';
import { render, screen } from '@testing-library/react';
import React, { type ComponentType } from 'react';

import { selectors } from '../src/selectors';
import { fakeTemplateSrv, instanceSettings } from '../src/testUtils';
import { evaluateAmd, readBundle } from './amd';

declare const REACT_MAJOR: number;

type AnyProps = Record<string, unknown>;

// Grafana sets its services on @grafana/runtime before it loads a plugin; these answer with nothing.
setTemplateSrv(fakeTemplateSrv());
setBackendSrv({ get: async () => [] } as unknown as BackendSrv);

function load() {
  // What Grafana does: each name the bundle asks for resolves to Grafana's own module.
  return evaluateAmd(readBundle(), (name) => jest.requireActual(name));
}

function newDataSource(plugin: DataSourcePlugin<DataSourceApi>) {
  // Grafana constructs the data source with its settings alone.
  const ds = new plugin.DataSourceClass(instanceSettings) as DataSourceWithBackend;
  jest.spyOn(ds, 'getResource').mockResolvedValue([]);
  return ds;
}

describe(`module.js under React ${REACT_MAJOR}`, () => {
  it(`runs on React ${REACT_MAJOR}`, () => {
    expect(React.version.split('.')[0]).toBe(String(REACT_MAJOR));
  });

  it('takes React and its JSX runtime from Grafana', () => {
    const { deps } = load();
    expect(deps).toEqual(expect.arrayContaining(['react', 'react/jsx-runtime']));
  });

  it('exports the plugin: a data source with its config and query editors', () => {
    const { exports } = load();
    const plugin = exports.plugin as DataSourcePlugin<DataSourceApi>;
    expect(plugin).toBeInstanceOf(DataSourcePlugin);
    expect(newDataSource(plugin)).toBeInstanceOf(DataSourceWithBackend);
    expect(plugin.components.ConfigEditor).toEqual(expect.any(Function));
    expect(plugin.components.QueryEditor).toEqual(expect.any(Function));
  });

  it('renders the config editor', async () => {
    const plugin = load().exports.plugin as DataSourcePlugin<DataSourceApi>;
    const ConfigEditor = plugin.components.ConfigEditor as ComponentType<DataSourcePluginOptionsEditorProps>;
    const options = { ...instanceSettings, url: '', jsonData: {}, secureJsonFields: {} };
    render(<ConfigEditor options={options as never} onOptionsChange={jest.fn()} />);
    expect(await screen.findByTestId(selectors.configEditor.scrapeInterval)).toBeInTheDocument();
  });

  it('renders the query editor', async () => {
    const plugin = load().exports.plugin as DataSourcePlugin<DataSourceApi>;
    const QueryEditor = plugin.components.QueryEditor as ComponentType<QueryEditorProps<DataSourceApi>>;
    const ds = newDataSource(plugin);
    render(<QueryEditor datasource={ds} query={{ refId: 'A' }} onChange={jest.fn()} onRunQuery={jest.fn()} />);
    expect(await screen.findByTestId(selectors.queryEditor.queryType)).toBeInTheDocument();
  });

  it('renders the variable editor', async () => {
    const plugin = load().exports.plugin as DataSourcePlugin<DataSourceApi>;
    const ds = newDataSource(plugin);
    const VariableEditor = (ds.variables as unknown as { editor: ComponentType<AnyProps> }).editor;
    render(<VariableEditor datasource={ds} query={{ refId: 'V' }} onChange={jest.fn()} onRunQuery={jest.fn()} />);
    expect(await screen.findByTestId(selectors.variableEditor.kind)).toBeInTheDocument();
  });
});
