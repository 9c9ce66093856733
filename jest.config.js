// Unit tests of the editors and the data source, in jsdom, compiled by swc.
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/src'],
  setupFilesAfterEnv: ['<rootDir>/jest.setup.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', tsx: true },
          transform: { react: { runtime: 'automatic' } },
        },
      },
    ],
  },
  // Some of @grafana/ui's dependencies ship only ES modules.
  transformIgnorePatterns: ['node_modules/(?!(d3|d3-.*|internmap|delaunator|robust-predicates|ol|uuid|marked|react-colorful|@kusto)/)'],
  moduleNameMapper: {
    '\\.(css|scss|svg)$': '<rootDir>/.config/jest/style-stub.js',
  },
  reporters: ['default', '<rootDir>/.config/jest/summary-reporter.js'],
};
