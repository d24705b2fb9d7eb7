// The JavaScript side lives in the app (rn-app/src/native.ts): this package only carries
// native code for autolinking.
module.exports = {};
