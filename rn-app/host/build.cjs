/**
 * Bundles the app for the host (docs/rn-host.md) with esbuild, the way Metro resolves it
 * (`mainFields: react-native, module, main`), `react-native` replaced by ./react-native.mjs.
 *
 * Usage: node build.cjs NODE_MODULES OUT_FILE
 *   NODE_MODULES: the folder `npm ci` made from ./package-lock.json (esbuild, react,
 *   react-test-renderer, onnxruntime-react-native, onnxruntime-common, base64-js).
 *
 * The app's bundled files (src/bundled.ts: `require('../assets/models/<file>')`) become
 * modules that read the host program's `__coldstartHost.assets[<file>]` at run time, so the
 * bundle does not depend on where the kit's model set lives: a model or the clip gives
 * `{path}` (for `Image.resolveAssetSource`), a .json file its parsed content.
 */
'use strict';
const path = require('path');

const [nodeModules, outfile] = process.argv.slice(2);
if (!nodeModules || !outfile) {
  console.error('usage: node build.cjs NODE_MODULES OUT_FILE');
  process.exit(2);
}
const esbuild = require(path.join(path.resolve(nodeModules), 'esbuild'));

const assets = {
  name: 'coldstart-assets',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/assets\/models\/[^/]+$/ }, args => ({
      path: path.basename(args.path),
      namespace: 'coldstart-asset',
    }));
    build.onLoad({ filter: /.*/, namespace: 'coldstart-asset' }, args => {
      const file = JSON.stringify(args.path);
      const where = `globalThis.__coldstartHost.assets[${file}]`;
      const contents = args.path.endsWith('.json')
        ? `module.exports = JSON.parse(globalThis.__coldstartHost.readText(${where}));`
        : `module.exports = ${where} === undefined ? null : { path: ${where} };`;
      return { contents, loader: 'js' };
    });
  },
};

esbuild
  .build({
    entryPoints: [path.join(__dirname, 'index.js')],
    bundle: true,
    outfile,
    format: 'iife',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['react-native', 'module', 'main'],
    conditions: ['react-native'],
    resolveExtensions: ['.tsx', '.ts', '.jsx', '.js', '.mjs', '.json'],
    nodePaths: [path.resolve(nodeModules)],
    alias: { 'react-native': path.join(__dirname, 'react-native.mjs') },
    define: { 'process.env.NODE_ENV': '"production"', __DEV__: 'false' },
    jsx: 'automatic',
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [assets],
  })
  .catch(() => process.exit(1));
