/**
 * The app's native projects live beside rn-app/ (../android, ../ios), not inside it.
 * @react-native-community/cli reads this for autolinking and `run-android` / `run-ios`.
 */
module.exports = {
  project: {
    android: { sourceDir: '../android' },
    ios: { sourceDir: '../ios' },
  },
};
