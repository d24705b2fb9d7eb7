/**
 * The app's entry on the host (docs/rn-host.md): the phone's entry (../index.js, which
 * registers App), then the registered component rendered with react-test-renderer, the
 * way a phone's React Native renders it into native views. When the app reports `done` or
 * `error`, the on-screen summary (`coldstart-summary`) is printed as one line
 * `COLDSTART-SUMMARY <text>` and the host program exits (0 after done, 1 after error).
 */
import './globals';
import '../index';
import React from 'react';
import TestRenderer from 'react-test-renderer';
import { registeredComponent } from 'react-native';
import { name as appName } from '../app.json';

const host = globalThis.__coldstartHost;
const print = console.log;
let renderer = null;
let final = null;

function summary() {
  const found = renderer ? renderer.root.findAll(n => n.props.testID === 'coldstart-summary') : [];
  if (found.length === 0) {
    return '';
  }
  const children = found[0].props.children;
  return Array.isArray(children) ? children.join('') : String(children);
}

function finish(tries) {
  const text = summary();
  if (!text.startsWith(final.phase) && tries > 0) {
    setTimeout(() => finish(tries - 1), 1); // React commits the last report's state first
    return;
  }
  print(`COLDSTART-SUMMARY ${text}`);
  host.exit(final.phase === 'done' ? 0 : 1);
}

console.log = (...args) => {
  print(...args);
  const line = typeof args[0] === 'string' ? args[0] : '';
  if (final === null && line.startsWith('COLDSTART {')) {
    let phase = null;
    try {
      phase = JSON.parse(line.slice('COLDSTART '.length)).phase;
    } catch {
      phase = null;
    }
    if (phase === 'done' || phase === 'error') {
      final = { phase };
      setTimeout(() => finish(1000), 0);
    }
  }
};

renderer = TestRenderer.create(React.createElement(registeredComponent(appName)));
