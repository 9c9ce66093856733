import { CustomVariableSupport, type DataQueryRequest, type DataQueryResponse } from '@grafana/data';
import { from, map, type Observable } from 'rxjs';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import type { DataSource } from './datasource';
import type { VllmVariableQuery } from './types';

/**
 * Template variable support: the editor and the query, answered by the data source's label-value
 * routes. Its own module, so that the data source does not import an editor that imports it back;
 * the data source is a type here only.
 */
export class VllmVariableSupport extends CustomVariableSupport<DataSource, VllmVariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: DataSource) {
    super();
  }

  query(request: DataQueryRequest<VllmVariableQuery>): Observable<DataQueryResponse> {
    const query = request.targets[0];
    return from(this.datasource.metricFindQuery(query, { scopedVars: request.scopedVars, range: request.range })).pipe(
      map((data) => ({ data }))
    );
  }
}
