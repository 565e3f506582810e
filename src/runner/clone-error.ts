// Why preparing a workspace failed: one line, free of credentials.
/** Clone or fetch failed; the message is one line, free of credentials. */
export class CloneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CloneError';
  }
}
