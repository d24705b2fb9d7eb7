/**
 * The coldstart app (docs/app.md): one cold launch = one scenario from the deep link
 * `coldstart://run?...`, reported phase by phase on the console (logcat `ReactNativeJS`,
 * the iOS unified log) and on screen.
 */
import React from 'react';
import { Linking, NativeModules } from 'react-native';
import { sinceStartMs } from './src/clock';
import { devicePlatform } from './src/devicePlatform';
import { LaunchScreen } from './src/LaunchScreen';

/** The deep link (Android intent data, iOS openURL), else an iOS launch argument. */
const getInitialUrl = async (): Promise<string | null> =>
  (await Linking.getInitialURL()) ?? NativeModules.ColdstartNative?.launchUrl ?? null;
const log = (line: string) => console.log(line);

export default function App() {
  return (
    <LaunchScreen
      getInitialUrl={getInitialUrl}
      makePlatform={devicePlatform}
      now={sinceStartMs}
      log={log}
    />
  );
}
