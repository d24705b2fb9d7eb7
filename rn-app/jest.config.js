/**
 * Jest: the React Native preset, plus
 * - model-set files (`.onnx`, `.wav`) required by src/bundled.ts become `{testUri}` objects,
 *   as images do in the preset;
 * - __tests__/support and __tests__/doubles hold helpers, not tests.
 * - __tests__/support/environment.js shares the host realm's typed arrays (see there).
 * The pipeline tests run the real models through onnxruntime-node (installed with
 * ONNXRUNTIME_NODE_INSTALL=skip: its postinstall only fetches CUDA binaries).
 */
module.exports = {
  preset: '@react-native/jest-preset',
  transform: {
    '^.+\\.(onnx|wav)$': require.resolve('@react-native/jest-preset/jest/assetFileTransformer.js'),
  },
  testPathIgnorePatterns: ['/node_modules/', '/__tests__/support/', '/__tests__/doubles/'],
  testEnvironment: '<rootDir>/__tests__/support/environment.js',
  // a bound, not a speed: a launch through the real models takes seconds on an idle 2-core
  // machine and can take ten times that on a loaded one (__tests__/support/waitUntil.ts)
  testTimeout: 120000,
};
