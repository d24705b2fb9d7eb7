// What React's scheduler looks for before it loads and the host program does not define
// (rn_host.cpp gives timers, console and performance).
if (typeof globalThis.queueMicrotask !== 'function') {
  globalThis.queueMicrotask = callback => {
    Promise.resolve()
      .then(callback)
      .catch(err => setTimeout(() => {
        throw err;
      }, 0));
  };
}
