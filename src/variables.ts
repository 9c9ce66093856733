import {
  CustomVariableSupport,
  type DataFrame,
  type DataQueryRequest,
  type DataQueryResponse,
  type MetricFindValue,
} from '@grafana/data';
import { from, map, of, type Observable } from 'rxjs';

import { variableQuery, VariableQueryEditor } from './components/VariableQueryEditor';
import type { DataSource } from './datasource';
import { DEFAULT_VARIABLE_QUERY, type VllmQuery, type VllmVariableQuery } from './types';

/** How many anomalous requests a trace-id variable offers; it picks the first by default. */
export const ANOMALOUS_CHOICES = 20;

/**
 * Template variable support: the editor and the query. Instances and models come from the data
 * source's label-value routes; anomalous requests from a requests query, so that a dashboard
 * opened without a trace id (the request drill-down) explains the most anomalous request of the
 * range instead of none; the trace data source from the settings, so that an imported
 * dashboard's trace panel reads the trace data source of whichever vLLM data source it is given.
 * Its own module, so that the data source does not import an editor that imports it back; the
 * data source is a type here only.
 */
export class VllmVariableSupport extends CustomVariableSupport<DataSource, VllmVariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: DataSource) {
    super();
  }

  /**
   * What Grafana's variable editor saves for a new variable instead of an empty string. Grafana
   * types it as the data source's query, but stores it as the variable's.
   */
  getDefaultQuery(): Pick<VllmVariableQuery, 'refId' | 'kind'> {
    return DEFAULT_VARIABLE_QUERY;
  }

  // The target is the variable's saved query as it is: an empty string for a variable saved
  // before it had a query, a plain string in older dashboards.
  query(request: DataQueryRequest<VllmVariableQuery>): Observable<DataQueryResponse> {
    const query = variableQuery(request.targets[0]);
    if (query.kind === 'traceDatasource') {
      return of({ data: this.datasource.traceDatasourceChoices() });
    }
    if (query.kind === 'anomalousRequests') {
      const target: VllmQuery = {
        refId: query.refId,
        queryType: 'requests',
        anomalousOnly: true,
        instance: query.instance,
        model: query.model,
        limit: ANOMALOUS_CHOICES,
      };
      return this.datasource
        .query({ ...request, targets: [target] })
        .pipe(map((response) => ({ ...response, data: requestChoices(response.data) })));
    }
    const labels = { ...query, kind: query.kind };
    return from(this.datasource.metricFindQuery(labels, { scopedVars: request.scopedVars, range: request.range })).pipe(
      map((data) => ({ data }))
    );
  }
}

/**
 * The options of a trace-id variable from a requests answer, in its order (the most anomalous
 * first): the trace id as the value, with its instance and why it stands out as the text.
 */
export function requestChoices(frames: DataFrame[]): MetricFindValue[] {
  return frames.flatMap((frame) => {
    const column = (name: string) => frame.fields.find((f) => f.name === name)?.values ?? [];
    const ids = column('trace_id');
    const instances = column('instance');
    const anomalies = column('anomalies');
    return ids.map((id, i) => {
      const value = String(id);
      const why = [instances[i], anomalies[i]].filter((v) => v !== undefined && v !== '').join(' · ');
      return { value, text: why === '' ? value : `${value} (${why})` };
    });
  });
}
