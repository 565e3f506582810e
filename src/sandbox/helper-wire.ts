// What the tool helper answers, as the host accepts it: every field checked, sizes bounded
// (the agent can replace the helper, so its replies are hostile input).
import { z } from 'zod';

const MiB = 1024 * 1024;
/** Largest file or stdin sent through the helper (as for reads). */
export const MAX_TRANSFER_BYTES = 64 * MiB;

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);
const PathText = z.string().max(65_536);
export const ReadResult = z.object({ data: Base64, realPath: PathText });
export const WriteResult = z.object({ realPath: PathText });
export const LinesResult = z.object({
  // At most the asked code points (each up to two UTF-16 units); checked exactly by the reader.
  text: z.string().max(2 * 1_000_000),
  totalChars: z.number().int().nonnegative(),
  realPath: PathText,
});
export const EditResult = z.object({ count: z.number().int().positive(), realPath: PathText });
export const GlobResult = z.object({
  matches: z.array(z.object({ path: PathText, realPath: PathText })),
});
export const GlobShownResult = z.object({
  shown: z.array(PathText),
  total: z.number().int().min(0),
});
export const ExecWireResult = z.object({
  exitCode: z.number().int(),
  stdout: Base64,
  stderr: Base64,
  stdoutDropped: z.number().int().nonnegative(),
  stderrDropped: z.number().int().nonnegative(),
  timedOut: z.boolean(),
  cancelled: z.boolean(),
  oomKilled: z.boolean(),
  pidsLimitHit: z.boolean(),
  countersAvailable: z.boolean(),
});
export type ExecWireResult = z.output<typeof ExecWireResult>;
