// Unit tests of the editors and the data source, in jsdom, compiled by swc.
module.exports = {
  testEnvironment: 'jsdom',
  // The editors render Grafana's own components (selects, the connection and auth sections),
  // which take seconds per test on a loaded 2-core machine: 5 s flakes there.
  testTimeout: 30000,
  roots: ['<rootDir>/src'],
  setupFiles: ['<rootDir>/.config/jest/setup-env.js'],
  setupFilesAfterEnv: ['<rootDir>/jest.setup.ts'],
  transform: {
    '^.+\\.(m?js|jsx|tsx?)$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', tsx: true },
          transform: { react: { runtime: 'automatic' } },
        },
      },
    ],
  },
  // Some of @grafana/ui's dependencies ship only ES modules: let swc compile those to CommonJS.
  transformIgnorePatterns: [
    `node_modules/(?!(${[
      'd3',
      'd3-.*',
      'internmap',
      'delaunator',
      'robust-predicates',
      'react-calendar',
      'get-user-locale',
      'memoize',
      'mimic-function',
      '@wojtekmaj',
      'date-fns',
      'ol',
      'uuid',
      'marked',
      'marked-mangle',
      'react-loading-skeleton',
      '@grafana/react-data-grid',
      '@tanstack',
      '@leeoniya',
      'compute-scroll-into-view',
      'web-vitals',
      'earcut',
      'rbush',
      'quickselect',
      'pbf',
      'geotiff',
      'zstddec',
      'web-worker',
      'quick-lru',
      'stylis',
      // Grafana 13 (.ci/frontend-grafana13): @grafana/data requires @react-hookz/web, which
      // requires @ver0/deep-equal; @grafana/plugin-ui 0.17 requires @marcbachmann/cel-js.
      '@react-hookz',
      '@ver0',
      '@marcbachmann',
      // @grafana/plugin-ui is CommonJS, but brings its own ES-module uuid under its node_modules.
      '@grafana/plugin-ui',
    ].join('|')})/)`,
  ],
  moduleNameMapper: {
    '^react-inlinesvg$': '<rootDir>/.config/jest/inlinesvg-stub.js',
    '\\.(css|scss|svg)$': '<rootDir>/.config/jest/style-stub.js',
  },
  reporters: ['default', '<rootDir>/.config/jest/summary-reporter.js'],
};
