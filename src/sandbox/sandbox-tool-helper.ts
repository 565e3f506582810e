// The long-lived tool helper that DockerSandbox runs inside each container (one
// `docker exec python3 -I -S -c <source>` per container), so a Read/Edit/Glob is one
// round trip instead of a file copy plus a new exec. Python 3 stdlib only: the sandbox
// image has python3 for the repositories anyway, and Python gives the tools Python's own
// error messages. The script is passed in argv, never written into the container, so the
// agent cannot tamper with it on disk; `-I` keeps /testbed out of sys.path.
//
// Wire format, both directions: a 4-byte big-endian length, then that many bytes of UTF-8
// JSON. The helper first sends {"hello": "frognano-tool-helper", "version", "pid", "python"}.
// Requests: {"id", "op": "read"|"write"|"glob"|"exec"|"cancel", ...}. Replies:
// {"id", "ok": true, "result"}, {"id", "ok": false, "error": {"pythonType", "message"}} and,
// for exec, {"id", "event": "started", "pgid"} as soon as the command runs.
// Read and Edit run here ("read_lines", "edit"), so the host only ever receives a bounded
// observation, never the file. With `--once` after the workdir the script answers a single
// request without a hello and exits: LocalSandbox runs it that way on the host.

import { HELPER_CORE } from './tool-helper-source/core.js';
import { HELPER_FILE_OPS } from './tool-helper-source/file-ops.js';
import { HELPER_LINE_OPS } from './tool-helper-source/line-ops.js';
import { HELPER_EXEC_OP } from './tool-helper-source/exec-op.js';
import { HELPER_DISPATCH } from './tool-helper-source/dispatch.js';

export const TOOL_HELPER_PROTOCOL_VERSION = 1;
export const TOOL_HELPER_HELLO = 'frognano-tool-helper';

/** The whole script, its parts in the order Python reads them. */
export const TOOL_HELPER_SOURCE = [
  HELPER_CORE,
  HELPER_FILE_OPS,
  HELPER_LINE_OPS,
  HELPER_EXEC_OP,
  HELPER_DISPATCH,
].join('');
