// Tests of the built dist/module.js (run after `npm run build`): what it bundles, and that it loads
// and renders with each React that Grafana gives plugins. React 19 is installed as react19 and
// react-dom19; its project maps every import of react and react-dom to them, those of
// @grafana/ui and of react-dom included, as Grafana 13.2 and later share one React 19.
const { reporters, ...base } = require('./jest.config');

const project = { ...base, roots: ['<rootDir>/test'] };

module.exports = {
  reporters,
  projects: [
    {
      ...project,
      displayName: 'bundle contents',
      testEnvironment: 'node',
      setupFiles: [],
      setupFilesAfterEnv: [],
      testMatch: ['**/contents.test.ts'],
    },
    { ...project, displayName: 'react 18', testMatch: ['**/load.test.tsx'], globals: { REACT_MAJOR: 18 } },
    {
      ...project,
      displayName: 'react 19',
      testMatch: ['**/load.test.tsx'],
      globals: { REACT_MAJOR: 19 },
      moduleNameMapper: {
        ...project.moduleNameMapper,
        '^react$': 'react19',
        '^react/(.*)$': 'react19/$1',
        '^react-dom$': 'react-dom19',
        '^react-dom/(.*)$': 'react-dom19/$1',
      },
    },
  ],
};
