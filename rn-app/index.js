/**
 * Entry point. The clock module comes first so `t_ms` counts from the bundle's start.
 */
import './src/clock';
import { AppRegistry } from 'react-native';
import App from './App';
import { name as appName } from './app.json';

AppRegistry.registerComponent(appName, () => App);
