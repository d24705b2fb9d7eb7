/**
 * The screen the driver reads: rendered with react-test-renderer around a real launch
 * (onnxruntime-node on the model set), it must end with the last protocol line under
 * testID `coldstart-status` and the summary under `coldstart-summary` (docs/app.md).
 */
import React from 'react';
import ReactTestRenderer from 'react-test-renderer';
import { LaunchScreen } from '../src/LaunchScreen';
import type { Platform } from '../src/launch';
import { parseLine } from '../src/protocol';
import { LAUNCH_ID_RE } from '../src/scenario';
import { FakeNativeCrash } from './doubles/FakeNativeCrash';
import { nodePlatform } from './support/nodePlatform';
import { waitUntil } from './support/waitUntil';

beforeEach(() => {
  jest.spyOn(console, 'warn').mockImplementation(() => {}); // "xnnpack" not in onnxruntime-node
});
afterEach(() => jest.restoreAllMocks());

function textOf(root: ReactTestRenderer.ReactTestInstance, testID: string): string {
  const node = root.find(n => n.props.testID === testID);
  const children = ([] as unknown[]).concat(node.props.children);
  return children.join('');
}

async function render(url: string | null, makePlatform: () => Platform) {
  const lines: string[] = [];
  let renderer!: ReactTestRenderer.ReactTestRenderer;
  await ReactTestRenderer.act(async () => {
    renderer = ReactTestRenderer.create(
      <LaunchScreen getInitialUrl={async () => url} makePlatform={makePlatform} now={() => 1} log={l => lines.push(l)} />,
    );
  });
  // wait for the launch to end (a line for done or error) and for the screen to show it:
  // the app logs each line, then renders it, and a render outside act() is only applied
  // at the next act(), so the log alone can be ahead of the screen
  await waitUntil(
    () => lines.some(l => /"phase":"(done|error)"/.test(l)) && textOf(renderer.root, 'coldstart-status') === lines[lines.length - 1],
  );
  return { root: renderer.root, lines, renderer };
}

test('a deep-linked launch ends with the done line on screen and in the log', async () => {
  const crash = new FakeNativeCrash();
  const { root, lines, renderer } = await render('coldstart://run?id=S-00001', () => nodePlatform({ crash: crash.crash }));
  expect(lines.map(l => parseLine(l).event?.phase)).toEqual([
    'start', 'models-ready', 'sessions-created', 'inference-done', 'sessions-released', 'done',
  ]);
  const status = textOf(root, 'coldstart-status');
  expect(status).toBe(lines[lines.length - 1]);
  expect(parseLine(status).event).toMatchObject({ id: 'S-00001', phase: 'done' });
  expect(textOf(root, 'coldstart-summary')).toMatch(
    /^done \| score 0\.99801\d* ok \| ORT 1\.24\.3 \| concurrent x3 xnnpack,cpu$/,
  );
  await ReactTestRenderer.act(async () => renderer.unmount());
});

test('without a deep link the defaults run under a generated launch id', async () => {
  const crash = new FakeNativeCrash();
  const { root, lines, renderer } = await render(null, () => nodePlatform({ crash: crash.crash }));
  const start = parseLine(lines[0]).event!;
  expect(start.phase).toBe('start');
  expect(start.id).toMatch(/^app-[0-9a-z]+-[0-9a-z]{4}$/);
  expect(start.id).toMatch(LAUNCH_ID_RE);
  expect(parseLine(textOf(root, 'coldstart-status')).event).toMatchObject({ id: start.id, phase: 'done' });
  await ReactTestRenderer.act(async () => renderer.unmount());
});

test('a refused deep link shows start then error under its launch id', async () => {
  const { root, lines, renderer } = await render('coldstart://run?id=S-3&mode=parallel', () => {
    throw new Error('must not be built for a refused scenario');
  });
  expect(lines).toEqual([
    'COLDSTART {"v":1,"id":"S-3","phase":"start","t_ms":1}',
    'COLDSTART {"v":1,"id":"S-3","phase":"error","t_ms":1,"message":"scenario key mode=\\"parallel\\" is invalid: expected concurrent or serial","after":"start"}',
  ]);
  expect(textOf(root, 'coldstart-status')).toBe(lines[1]);
  expect(textOf(root, 'coldstart-summary')).toBe('error | scenario key mode="parallel" is invalid: expected concurrent or serial');
  await ReactTestRenderer.act(async () => renderer.unmount());
});

test('a build without the native module reports error instead of hanging', async () => {
  const { lines, renderer } = await render('coldstart://run?id=S-4', () => {
    throw new Error('the native module ColdstartNative is missing');
  });
  expect(lines.map(l => parseLine(l).event?.phase)).toEqual(['start', 'error']);
  expect(parseLine(lines[1]).event!.fields.message).toBe('the native module ColdstartNative is missing');
  await ReactTestRenderer.act(async () => renderer.unmount());
});
