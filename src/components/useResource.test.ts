import { errorMessage } from './useResource';

describe('errorMessage', () => {
  it.each<[string, unknown, string]>([
    ['a plugin route error', { status: 502, data: { error: 'Prometheus unreachable' } }, 'Prometheus unreachable'],
    ['a Grafana error', { status: 404, data: { message: 'Plugin not found' } }, 'Plugin not found'],
    ['a fetch error with its own message', { status: 500, data: null, message: 'Internal' }, 'Internal'],
    [
      'a fetch error with a status only',
      { status: 503, statusText: 'Service Unavailable', data: '' },
      '503 Service Unavailable',
    ],
    ['a network failure', new Error('Failed to fetch'), 'Failed to fetch'],
    ['anything else', 'boom', 'boom'],
  ])('reads %s', (_name, err, want) => {
    expect(errorMessage(err)).toBe(want);
  });
});
