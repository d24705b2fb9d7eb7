/**
 * The app bundles exactly the model set of models/manifest.json: src/bundled.ts requires
 * each model by name from assets/models/ (filled by scripts/copy-models.js).
 */
import { CLIP_ASSET, EXPECTED, MANIFEST, MODEL_ASSETS } from '../src/bundled';
import { readExpected, readManifest } from './support/nodePlatform';

test('every manifest model is bundled under its name, and nothing else', () => {
  const manifest = readManifest();
  expect(Object.keys(MODEL_ASSETS).sort()).toEqual(manifest.models.map(m => m.name).sort());
  for (const m of manifest.models) {
    // Jest's asset transformer gives the required file's path
    expect((MODEL_ASSETS[m.name] as unknown as { testUri: string }).testUri).toMatch(
      new RegExp(`assets/models/${m.file.replace(/\./g, '\\.')}$`),
    );
  }
  expect((CLIP_ASSET as unknown as { testUri: string }).testUri).toMatch(/assets\/models\/clip\.wav$/);
});

test('the bundled manifest and expected scores are the checkout\'s', () => {
  expect(MANIFEST).toEqual(readManifest());
  expect(EXPECTED).toEqual(readExpected());
});
