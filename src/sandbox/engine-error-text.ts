/** What went wrong, in the engine's words when it answered with a JSON message. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const json = (error as { json?: { message?: string } }).json;
    return json?.message ?? error.message;
  }
  return String(error);
}
