// jsdom lacks browser APIs that @grafana/ui and react-dom/server call while loading and rendering.
const util = require('node:util');

class ObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
}

Object.assign(globalThis, { TextDecoder: util.TextDecoder, TextEncoder: util.TextEncoder });
Object.defineProperty(window, 'ResizeObserver', { writable: true, value: ObserverStub });
Object.defineProperty(window, 'IntersectionObserver', { writable: true, value: ObserverStub });
Object.defineProperty(window, 'matchMedia', {
  writable: true,
  value: (query) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => {},
    removeListener: () => {},
    addEventListener: () => {},
    removeEventListener: () => {},
    dispatchEvent: () => false,
  }),
});
