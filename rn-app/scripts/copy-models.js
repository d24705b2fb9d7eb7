#!/usr/bin/env node
/**
 * Copy the model set into the app: <repo>/models -> rn-app/assets/models (git-ignored).
 *
 * The three .onnx files are fetched by `coldstart models fetch` and never committed
 * (CC BY-NC-SA 4.0), so every build copies them in first: `npm run models`, the
 * bundle scripts, the Gradle task `copyColdstartModels` (android/app/build.gradle) and the
 * Xcode "Bundle React Native code and images" phase all run this script. Metro then
 * bundles them as assets (metro.config.js adds the `onnx` extension): Android
 * `res/raw/assets_models_*.onnx`, iOS `assets/assets/models/*.onnx` in the .app.
 *
 * Each model is checked against its sha256 in models/manifest.json, so a build never
 * ships a truncated or tampered model. Copies whose bytes are already right are left
 * alone (Metro's cache and Gradle's up-to-date checks stay valid).
 *
 * Usage: node scripts/copy-models.js [--models DIR] [--out DIR]
 * Exit 0 on success, 2 with one line on stderr when a model is missing or wrong.
 */
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

function fail(message, hint) {
  process.stderr.write(`copy-models: error: ${message} (${hint})\n`);
  process.exit(2);
}

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function main(argv) {
  const appDir = path.resolve(__dirname, '..');
  let modelsDir = process.env.COLDSTART_MODELS || path.resolve(appDir, '..', 'models');
  let outDir = path.join(appDir, 'assets', 'models');
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--models' && argv[i + 1]) {
      modelsDir = path.resolve(argv[++i]);
    } else if (argv[i] === '--out' && argv[i + 1]) {
      outDir = path.resolve(argv[++i]);
    } else {
      fail(`unknown argument ${JSON.stringify(argv[i])}`, 'usage: copy-models.js [--models DIR] [--out DIR]');
    }
  }
  const manifestPath = path.join(modelsDir, 'manifest.json');
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  } catch (err) {
    fail(`cannot read ${manifestPath}: ${err.message}`, 'run from a coldstart checkout or pass --models DIR');
  }
  const wanted = manifest.models.map(m => ({ file: m.file, sha256: m.sha256 }));
  wanted.push({ file: manifest.clip.file, sha256: manifest.clip.sha256 });
  for (const { file, sha256: want } of wanted) {
    const src = path.join(modelsDir, file);
    if (!fs.existsSync(src)) {
      fail(`${src} is missing`, 'run `coldstart models fetch` first');
    }
    if (sha256(src) !== want) {
      fail(`${src} does not match its pinned sha256`, 'run `coldstart models fetch --force`');
    }
  }
  fs.mkdirSync(outDir, { recursive: true });
  const copied = [];
  const files = [...wanted.map(w => w.file), 'manifest.json', 'expected.json'];
  for (const file of files) {
    const src = path.join(modelsDir, file);
    const dst = path.join(outDir, file);
    const bytes = fs.readFileSync(src);
    if (fs.existsSync(dst) && fs.readFileSync(dst).equals(bytes)) {
      continue;
    }
    const tmp = `${dst}.part`;
    fs.writeFileSync(tmp, bytes);
    fs.renameSync(tmp, dst);
    copied.push(file);
  }
  process.stdout.write(
    `copy-models: ${files.length} files in ${path.relative(process.cwd(), outDir) || '.'}` +
      (copied.length ? ` (updated: ${copied.join(', ')})` : ' (up to date)') + '\n',
  );
}

main(process.argv.slice(2));
