/**
 * The whole app under Jest: App -> LaunchScreen -> devicePlatform, with the two native
 * pieces replaced by doubles (__tests__/doubles): ColdstartNative behaves as the iOS module
 * does on a release bundle (assets are file:// URLs inside the app), and
 * onnxruntime-react-native forwards to onnxruntime-node. The models, the clip, the pipeline
 * and the expected scores are the real ones.
 */
import * as path from 'path';
import React from 'react';
import ReactTestRenderer from 'react-test-renderer';
import { Image, Linking, NativeModules } from 'react-native';
import { parseLine } from '../src/protocol';
import { FakeColdstartNative } from './doubles/FakeColdstartNative';
import { waitUntil } from './support/waitUntil';

jest.mock('onnxruntime-react-native', () => require('./doubles/onnxruntimeReactNative_double'));

const native = new FakeColdstartNative();
NativeModules.ColdstartNative = native;

// Jest's asset transformer makes each bundled file `{testUri}`, relative to react-native/jest;
// a release iOS bundle resolves it to a file:// URL inside the .app.
const RN_JEST_DIR = path.join(path.dirname(require.resolve('react-native/package.json')), 'jest');
jest.spyOn(Image, 'resolveAssetSource').mockImplementation(source => {
  const testUri = (source as unknown as { testUri: string }).testUri;
  return { uri: `file://${path.resolve(RN_JEST_DIR, testUri)}`, width: 0, height: 0, scale: 1 };
});

test('the app runs a deep-linked launch on the bundled model set and reports done', async () => {
  jest.spyOn(Linking, 'getInitialURL').mockResolvedValue('coldstart://run?id=A-00001&mode=serial');
  jest.spyOn(console, 'warn').mockImplementation(() => {}); // no "xnnpack" in onnxruntime-node
  const lines: string[] = [];
  jest.spyOn(console, 'log').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  const App = require('../App').default;
  let renderer!: ReactTestRenderer.ReactTestRenderer;
  await ReactTestRenderer.act(async () => {
    renderer = ReactTestRenderer.create(<App />);
  });
  // the end in the log, and on screen (the app logs a line, then renders it)
  const shown = () => renderer.root.find(n => n.props.testID === 'coldstart-status').props.children;
  await waitUntil(() => lines.some(l => /"phase":"(done|error)"/.test(l)) && shown() === lines[lines.length - 1]);
  const events = lines.map(l => parseLine(l).event!);
  expect(events.map(e => e.phase)).toEqual([
    'start', 'models-ready', 'sessions-created', 'inference-done', 'sessions-released', 'done',
  ]);
  expect(events.every(e => e.id === 'A-00001')).toBe(true);
  expect(events[0].fields.poison).toEqual({ MallocScribble: '1' });
  expect(events[2].fields.ort_version).toBe('1.24.3');
  expect(events[3].fields.ok).toBe(true);
  // every model and the clip went through the native module by file name
  expect(native.resolved.map(r => r.fileName).sort()).toEqual([
    'clip.wav', 'embedding_model.onnx', 'hey_jarvis_v0.1.onnx', 'melspectrogram.onnx',
  ]);
  const status = renderer.root.find(n => n.props.testID === 'coldstart-status');
  expect(status.props.children).toBe(lines[lines.length - 1]);
  await ReactTestRenderer.act(async () => renderer.unmount());
});

test('a build without the ColdstartNative module reports error, it does not crash', async () => {
  jest.spyOn(Linking, 'getInitialURL').mockResolvedValue('coldstart://run?id=A-00002');
  const lines: string[] = [];
  jest.spyOn(console, 'log').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  const saved = NativeModules.ColdstartNative;
  delete NativeModules.ColdstartNative;
  try {
    const App = require('../App').default;
    let renderer!: ReactTestRenderer.ReactTestRenderer;
    await ReactTestRenderer.act(async () => {
      renderer = ReactTestRenderer.create(<App />);
    });
    await waitUntil(() => lines.length >= 2);
    const events = lines.map(l => parseLine(l).event!);
    expect(events.map(e => [e.id, e.phase])).toEqual([['A-00002', 'start'], ['A-00002', 'error']]);
    expect(events[1].fields.message).toBe(
      'the native module ColdstartNative is missing: rebuild the app (autolinking of rn-app/modules/coldstart-native)',
    );
    await ReactTestRenderer.act(async () => renderer.unmount());
  } finally {
    NativeModules.ColdstartNative = saved;
  }
});
