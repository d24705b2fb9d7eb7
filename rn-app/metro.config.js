const { getDefaultConfig, mergeConfig } = require('@react-native/metro-config');

/**
 * Metro configuration (https://reactnative.dev/docs/metro).
 *
 * The model set is bundled as assets: `onnx` joins the asset extensions (`wav` already is
 * one), so `require('../assets/models/x.onnx')` ships the file in the release bundle
 * (Android `res/raw/`, iOS `assets/` inside the .app). scripts/copy-models.js puts the
 * files there from the checkout's models/.
 *
 * @type {import('@react-native/metro-config').MetroConfig}
 */
const defaultConfig = getDefaultConfig(__dirname);
const config = {
  resolver: {
    assetExts: [...defaultConfig.resolver.assetExts, 'onnx'],
  },
};

module.exports = mergeConfig(defaultConfig, config);
