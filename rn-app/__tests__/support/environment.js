/**
 * The React Native preset's Jest environment, with the host realm's typed arrays.
 *
 * Jest runs each test file in its own vm context, so `Float32Array` inside a test is not
 * the `Float32Array` of the Node realm where onnxruntime-node's native addon creates its
 * output buffers; onnxruntime-common's `Tensor` then refuses them ("A float32 tensor's
 * data must be type of function Float32Array()"), an `instanceof` across realms. Sharing
 * the host's typed-array constructors makes both sides agree. Nothing else changes.
 */
'use strict';

const ReactNativeEnv = require('@react-native/jest-preset/jest/react-native-env.js');

const SHARED = [
  'ArrayBuffer', 'SharedArrayBuffer', 'DataView',
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
  'BigInt64Array', 'BigUint64Array',
];

module.exports = class OrtNodeEnvironment extends ReactNativeEnv {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) {
      if (typeof globalThis[name] === 'function') {
        this.global[name] = globalThis[name];
      }
    }
  }
};
