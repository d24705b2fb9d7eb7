#!/bin/sh
# How models/clip.wav was made (Debian 12: espeak-ng 1.51, sox 14.4.2). Our own recording of
# a synthetic voice, so it carries no third-party licence. Other espeak-ng versions give other
# bytes: after remaking the clip, run `coldstart models expected` to recompute expected.json.
set -eu
out=${1:-"$(dirname "$0")/clip.wav"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
espeak-ng -v en-us -s 140 -w "$tmp/raw.wav" "hey jarvis"
sox -D "$tmp/raw.wav" -r 16000 -c 1 -b 16 "$tmp/voice.wav"
sox -D -n -r 16000 -c 1 -b 16 "$tmp/pre.wav" trim 0 1.0
sox -D -n -r 16000 -c 1 -b 16 "$tmp/post.wav" trim 0 0.05
sox -D "$tmp/pre.wav" "$tmp/voice.wav" "$tmp/post.wav" "$out"
