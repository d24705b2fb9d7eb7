#!/usr/bin/env node
/**
 * Check that the Metro release bundles carry the model set (scripts/test-rn.sh runs this).
 *
 * For every model and the clip of models/manifest.json, in each bundle output folder:
 * - the JS bundle registers the asset (`registerAsset({... name, type, hash})`) and the
 *   registered hash is the file's md5 (Metro's asset hash);
 * - Android: `res/raw/<resource id>.<ext>`, the resource id computed by React Native's own
 *   `getAndroidResourceIdentifier` (@react-native/asset-utils), has the pinned sha256;
 * - iOS: `assets/assets/models/<file>` has the pinned sha256.
 *
 * Usage: node scripts/check-bundles.js ANDROID_OUT_DIR IOS_OUT_DIR
 * Exit 0 when everything is there; 1 with one line per problem otherwise.
 */
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { getAndroidResourceIdentifier } = require('@react-native/asset-utils');

const hash = (algo, file) => crypto.createHash(algo).update(fs.readFileSync(file)).digest('hex');

function registered(bundleText, name, type) {
  // Metro writes: registerAsset({__packager_asset:!0,httpServerLocation:"/assets/assets/models",
  //   scales:[1],hash:"<md5>",name:"<name>",type:"<ext>"})
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(
    `registerAsset\\(\\{[^}]*httpServerLocation:"/assets/assets/models"[^}]*hash:"([0-9a-f]{32})",name:"${escaped}",type:"${type}"\\}\\)`,
  );
  const match = re.exec(bundleText);
  return match ? match[1] : null;
}

function main([androidDir, iosDir]) {
  if (!androidDir || !iosDir) {
    process.stderr.write('usage: check-bundles.js ANDROID_OUT_DIR IOS_OUT_DIR\n');
    process.exit(2);
  }
  const modelsDir = process.env.COLDSTART_MODELS || path.resolve(__dirname, '..', '..', 'models');
  const manifest = JSON.parse(fs.readFileSync(path.join(modelsDir, 'manifest.json'), 'utf8'));
  const files = [...manifest.models.map(m => ({ file: m.file, sha256: m.sha256 })),
    { file: manifest.clip.file, sha256: manifest.clip.sha256 }];
  const bundles = {
    android: fs.readFileSync(path.join(androidDir, 'index.android.bundle'), 'utf8'),
    ios: fs.readFileSync(path.join(iosDir, 'main.jsbundle'), 'utf8'),
  };
  const problems = [];
  for (const { file, sha256 } of files) {
    const ext = path.extname(file).slice(1);
    const name = path.basename(file, `.${ext}`);
    const md5 = hash('md5', path.join(modelsDir, file));
    for (const [platform, text] of Object.entries(bundles)) {
      const got = registered(text, name, ext);
      if (got === null) {
        problems.push(`${platform} bundle does not register ${file}`);
      } else if (got !== md5) {
        problems.push(`${platform} bundle registers ${file} with hash ${got}, the file's md5 is ${md5}`);
      }
    }
    const resId = getAndroidResourceIdentifier({ httpServerLocation: '/assets/assets/models', name, type: ext });
    const outputs = {
      android: path.join(androidDir, 'res', 'raw', `${resId}.${ext}`),
      ios: path.join(iosDir, 'assets', 'assets', 'models', file),
    };
    for (const [platform, out] of Object.entries(outputs)) {
      if (!fs.existsSync(out)) {
        problems.push(`${platform}: ${out} is missing`);
      } else if (hash('sha256', out) !== sha256) {
        problems.push(`${platform}: ${out} does not match the pinned sha256 of ${file}`);
      } else {
        process.stdout.write(`ok  ${platform.padEnd(7)} ${path.relative(process.cwd(), out)}  sha256 ${sha256.slice(0, 16)}\n`);
      }
    }
  }
  for (const p of problems) {
    process.stdout.write(`FAIL ${p}\n`);
  }
  process.exit(problems.length ? 1 : 0);
}

main(process.argv.slice(2));
