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
  if (err && typeof err === 'object') {
    const e = err as {
      data?: { error?: unknown; message?: unknown };
      message?: unknown;
      statusText?: unknown;
      status?: unknown;
    };
    if (typeof e.data?.error === 'string' && e.data.error !== '') {
      return e.data.error;
    }
    if (typeof e.data?.message === 'string' && e.data.message !== '') {
      return e.data.message;
    }
    if (typeof e.message === 'string' && e.message !== '') {
      return e.message;
    }
    if (typeof e.statusText === 'string' && e.statusText !== '') {
      return `${e.status ?? ''} ${e.statusText}`.trim();
    }
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
