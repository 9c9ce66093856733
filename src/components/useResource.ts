import { type FetchErrorDataProps, isFetchError } from '@grafana/runtime';
import { useEffect, useState } from 'react';

export interface ResourceState<T> {
  value?: T;
  error?: string;
  loading: boolean;
}

/**
 * Turns an error from a resource call into a sentence for the editor. Grafana's fetch errors carry
 * the backend's message in data.error (this plugin's routes) or data.message (Grafana's own); a
 * network failure is a plain Error.
 */
export function errorMessage(err: unknown): string {
  if (isFetchError<unknown>(err)) {
    const data = (typeof err.data === 'object' && err.data !== null ? err.data : {}) as FetchErrorDataProps;
    for (const text of [data.error, data.message, err.message]) {
      if (typeof text === 'string' && text !== '') {
        return text;
      }
    }
    return `${err.status} ${err.statusText ?? ''}`.trim();
  }
  if (err instanceof Error && err.message !== '') {
    return err.message;
  }
  return String(err);
}

/**
 * Loads a backend resource once per `load` identity (callers memoise it with useCallback). A
 * failure becomes `error` instead of an exception, so the editor around it stays usable.
 */
export function useResource<T>(load: () => Promise<T>): ResourceState<T> {
  const [state, setState] = useState<ResourceState<T>>({ loading: true });
  useEffect(() => {
    let current = true;
    setState({ loading: true });
    load().then(
      (value) => current && setState({ value, loading: false }),
      (err: unknown) => current && setState({ error: errorMessage(err), loading: false })
    );
    return () => {
      current = false;
    };
  }, [load]);
  return state;
}
