// The tool helper's first part: its imports, limits and the framed channel to the host
// (send, read_exact). Every part is Python text joined in order into TOOL_HELPER_SOURCE
// (../sandbox-tool-helper.ts); a part is cut only between top-level definitions.
export const HELPER_CORE = String.raw`
import base64, codecs, errno, glob, io, json, os, selectors, signal, stat, struct, subprocess, sys, threading, time

VERSION = 1
MAX_REQUEST = 256 * 1024 * 1024
MAX_READ = 64 * 1024 * 1024
# Read streams the file: only the observation's first code points are ever held.
READ_CHUNK = 1024 * 1024
MAX_STREAM = 1024 * 1024 * 1024
LINE_SEPS = "\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
CONTINUATION = bytes(range(0x80, 0xC0))
WORKDIR = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
BASE_ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}

_in = sys.stdin.buffer
_out = sys.stdout.buffer
sys.stdout = sys.stderr  # nothing but frames may reach the channel
_send_lock = threading.Lock()
_procs = {}
_procs_lock = threading.Lock()


def send(obj):
    data = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    with _send_lock:
        _out.write(struct.pack(">I", len(data)) + data)
        _out.flush()


def read_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = _in.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def b64(data):
    return base64.b64encode(data).decode("ascii")


def nonblocking(path, flags):
    # A FIFO must not hang the helper: open it without waiting for the other end.
    return os.open(path, flags | os.O_NONBLOCK, 0o666)
`;
