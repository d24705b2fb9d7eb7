/**
 * Test double for ColdstartNative.crash: the real one kills the process with SIGSEGV or
 * SIGABRT (checked natively by scripts/test-rn.sh, which compiles the shared C++ and runs
 * it); under Jest the kinds asked for are recorded instead, and the call returns, which the
 * launch reports as "inject=... did not end the process".
 */
export class FakeNativeCrash {
  readonly kinds: Array<'segv' | 'abort'> = [];

  readonly crash = (kind: 'segv' | 'abort'): void => {
    this.kinds.push(kind);
  };
}
