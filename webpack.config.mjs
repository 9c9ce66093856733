// Builds dist/module.js the way Grafana loads a plugin: one AMD module whose Grafana-provided
// libraries stay external, beside plugin.json, the logo and the README.
import CopyWebpackPlugin from 'copy-webpack-plugin';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const pluginId = JSON.parse(readFileSync(path.join(root, 'plugin.json'), 'utf8')).id;
const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;

// plugin.json keeps %VERSION% and %TODAY% so that a release changes package.json alone.
function stampPluginJson(content) {
  const today = new Date().toISOString().slice(0, 10);
  return content.toString().replaceAll('%VERSION%', version).replaceAll('%TODAY%', today);
}

// Modules that Grafana's plugin loader provides at run time (its sharedDependencies map): bundling a
// second copy of React or of @grafana/* breaks hooks and context. The JSX runtime is Grafana's too:
// a bundled one belongs to the React it came from (React 18's reads internals React 19 removed, and
// Grafana runs React 19 from 13.2), and Grafana shares it from 12.0.10, 12.1.7, 12.2.5 and 12.3.0
// on, which is why plugin.json's grafanaDependency starts there. @grafana/schema is not in the map,
// so it is bundled (types and a few enums).
const externals = [
  'react',
  'react/jsx-runtime',
  'react/jsx-dev-runtime',
  'react-dom',
  'rxjs',
  'rxjs/operators',
  'lodash',
  'moment',
  'd3',
  '@emotion/css',
  '@emotion/react',
  /^@grafana\/(data|ui|runtime)(\/unstable)?$/,
];

export default (_env, argv) => {
  const production = argv.mode !== 'development';
  return {
    context: path.join(root, 'src'),
    entry: { module: './module.ts' },
    devtool: production ? 'source-map' : 'eval-source-map',
    mode: production ? 'production' : 'development',
    externals,
    externalsType: 'amd',
    output: {
      path: path.join(root, 'dist'),
      filename: '[name].js',
      library: { type: 'amd' },
      publicPath: `public/plugins/${pluginId}/`,
      clean: { keep: /^gpx_/ },
      uniqueName: pluginId,
    },
    resolve: { extensions: ['.ts', '.tsx', '.js'] },
    module: {
      rules: [
        {
          test: /\.tsx?$/,
          exclude: /node_modules/,
          use: {
            loader: 'swc-loader',
            options: {
              jsc: {
                target: 'es2022',
                parser: { syntax: 'typescript', tsx: true },
                transform: { react: { runtime: 'automatic' } },
              },
            },
          },
        },
      ],
    },
    plugins: [
      new CopyWebpackPlugin({
        patterns: [
          { from: '../plugin.json', to: '.', transform: stampPluginJson },
          { from: '../README.md', to: '.', noErrorOnMissing: true },
          { from: 'img', to: 'img' },
        ],
      }),
    ],
    performance: { hints: false },
  };
};
