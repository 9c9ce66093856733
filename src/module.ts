import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { type VllmDataSourceOptions, type VllmQuery, type VllmSecureJsonData } from './types';

export const plugin = new DataSourcePlugin<DataSource, VllmQuery, VllmDataSourceOptions, VllmSecureJsonData>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
