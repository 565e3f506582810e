// SIGINT/SIGTERM while runs are active: abort them; when the last one has cleaned up, let
// the signal take its default effect (the process ends), unless someone else (the CLI)
// was listening for it at the time and so decides what happens next.

// How long a SIGINT/SIGTERM waits for the runs to clean up before the default action.
const SIGNAL_CLEANUP_GRACE_MS = 30_000;
const activeRuns = new Set<() => void>();
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
let pending: { sig: NodeJS.Signals; othersListening: boolean } | undefined;

function onProcessSignal(sig: NodeJS.Signals): void {
  pending ??= { sig, othersListening: process.listenerCount(sig) > 1 };
  for (const abort of activeRuns) abort();
  // A cleanup that hangs must not keep a signalled process alive for ever.
  setTimeout(() => reRaise(), SIGNAL_CLEANUP_GRACE_MS).unref();
}

function reRaise(): void {
  const signal = pending;
  if (!signal || signal.othersListening) return;
  for (const s of SIGNALS) process.off(s, onProcessSignal);
  process.kill(process.pid, signal.sig);
}

/** Aborts the run on SIGINT/SIGTERM; the returned function unregisters it. */
export function registerActiveRun(abort: () => void): () => void {
  if (activeRuns.size === 0) for (const s of SIGNALS) process.on(s, onProcessSignal);
  activeRuns.add(abort);
  return () => {
    activeRuns.delete(abort);
    if (activeRuns.size > 0) return;
    for (const s of SIGNALS) process.off(s, onProcessSignal);
    // Before returning to the caller: a signalled run must not be followed by more work.
    if (pending) reRaise();
    // Someone else handles the signal (and decides about the process): forget it.
    pending = undefined;
  };
}
