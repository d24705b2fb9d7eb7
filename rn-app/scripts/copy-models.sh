#!/bin/sh
# Xcode build-phase helper (ios/ColdstartApp.xcodeproj, "Bundle React Native code and
# images"): copy the model set in with the node that ios/.xcode.env chose.
set -e
exec "${NODE_BINARY:-node}" "$(dirname "$0")/copy-models.js"
