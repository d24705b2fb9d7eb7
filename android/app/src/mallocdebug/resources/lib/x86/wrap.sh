#!/system/bin/sh
# coldstart "mallocdebug" build: run the app under bionic malloc debug with fill_on_free
# (freed memory is filled with 0xef), so a use-after-free of ONNX Runtime's XNNPACK
# allocator (onnxruntime#32461) faults at once instead of staying latent.
# Android runs lib/<abi>/wrap.sh only for a debuggable app with extracted native libraries.
LIBC_DEBUG_MALLOC_OPTIONS=fill_on_free exec "$@"
