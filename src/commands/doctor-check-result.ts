// One doctor check's answer: shared by the checks in doctor.ts and the endpoint checks.

export type CheckResult =
  | { ok: true; detail: string }
  /**
   * `warn`: runs can still work (the image builds itself); `block`: they cannot; `skipped`:
   * not checked because an earlier check it needs failed (that one already says what to do).
   */
  | { ok: false; severity: 'warn' | 'block' | 'skipped'; problem: string; fix: string };
