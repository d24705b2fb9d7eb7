/**
 * Test double for the `onnxruntime-react-native` package under Jest, where its native
 * module is absent (importing the real one throws at `Module.install()`). It forwards
 * `InferenceSession.create(path, options)` to onnxruntime-node, which runs the same ORT C API
 * on the same model files, and installs `globalThis.OrtApi.version` as the binding's JSI
 * install does (JsiMain.cpp), with onnxruntime-node's native version.
 */
import * as ort from 'onnxruntime-node';

(globalThis as unknown as { OrtApi: { version: string } }).OrtApi = {
  version: ort.env.versions.node ?? 'unknown',
};

export const InferenceSession = {
  create: (path: string, options: ort.InferenceSession.SessionOptions) =>
    ort.InferenceSession.create(path, options),
};
export const Tensor = ort.Tensor;
