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

export const TOOL_HELPER_PROTOCOL_VERSION = 1;
export const TOOL_HELPER_HELLO = 'frognano-tool-helper';

export const TOOL_HELPER_SOURCE = String.raw`
import base64, errno, glob, json, os, selectors, signal, struct, subprocess, sys, threading, time

VERSION = 1
MAX_REQUEST = 256 * 1024 * 1024
MAX_READ = 64 * 1024 * 1024
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


def op_read(req):
    path = req["path"]
    with open(path, "rb", opener=nonblocking) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_READ:
            raise OSError(errno.EFBIG, "File too large for the sandbox transport (%d bytes; limit %d)" % (size, MAX_READ), path)
        data = f.read(MAX_READ + 1) or b""
    if len(data) > MAX_READ:
        raise OSError(errno.EFBIG, "File too large for the sandbox transport (limit %d bytes)" % MAX_READ, path)
    return {"data": b64(data), "realPath": os.path.realpath(path)}


def op_write(req):
    path = req["path"]
    data = base64.b64decode(req["data"])
    parent = os.path.dirname(path)
    if parent:
        import pathlib
        pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
    with open(path, "wb", opener=nonblocking) as f:
        f.write(data)
    return {"realPath": os.path.realpath(path)}


def op_glob(req):
    out = []
    for m in glob.glob(req["pattern"], recursive=True):
        if os.path.isfile(m):
            out.append({"path": m, "realPath": os.path.realpath(m)})
    return {"matches": out}


def read_counter(paths, key):
    for p in paths:
        try:
            with open(p) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == key:
                        return int(parts[1])
        except (OSError, ValueError):
            continue
    return None


def counters():
    return (
        read_counter(("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"), "oom_kill"),
        read_counter(("/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events"), "max"),
    )


def group_alive(pgid):
    # Zombies still count for killpg; only a live member means the group is not dead yet.
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def kill_group(pgid, proc):
    # Repeat: a fork bomb may still be forking while the first signal lands.
    for _ in range(400):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        proc.poll()
        if not group_alive(pgid):
            return
        time.sleep(0.005)


class Capture(object):
    def __init__(self, cap):
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk):
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            # Code points = bytes that are not UTF-8 continuation bytes.
            self.dropped += len(chunk.translate(None, CONTINUATION))


def op_exec(req):
    rid = req["id"]
    env = dict(BASE_ENV)
    env.update(req.get("env") or {})
    stdin = base64.b64decode(req.get("stdin") or "")
    cap = int(req.get("maxOutputBytes", 1 << 20))
    timeout_ms = req.get("timeoutMs")
    before = counters()
    started = time.monotonic()
    deadline = started + timeout_ms / 1000.0 if timeout_ms is not None else None
    proc = subprocess.Popen(
        ["/bin/bash", "-lc", req["command"]],
        cwd=req.get("cwd") or WORKDIR,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pgid = proc.pid
    state = {"proc": proc, "pgid": pgid, "cancelled": False}
    with _procs_lock:
        _procs[rid] = state
    try:
        try:
            # Make the command, not the helper, the memory cgroup's preferred victim.
            with open("/proc/%d/oom_score_adj" % pgid, "w") as f:
                f.write("500")
        except OSError:
            pass
        send({"id": rid, "event": "started", "pgid": pgid})
        out, err = Capture(cap), Capture(cap)
        sel = selectors.DefaultSelector()
        for stream, cap_obj in ((proc.stdout, out), (proc.stderr, err)):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, cap_obj)
        pos = 0
        if stdin:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, None)
        else:
            proc.stdin.close()
        timed_out = False
        while True:
            now = time.monotonic()
            if state["cancelled"] or (deadline is not None and now >= deadline):
                # Like Python's TimeoutExpired: keep what was read so far and wait for bash
                # only; a process that left the group may hold the pipes open forever.
                timed_out = not state["cancelled"]
                kill_group(pgid, proc)
                break
            reading = any(key.data is not None for key in sel.get_map().values())
            if not reading and proc.poll() is not None:
                break
            wait = 0.5 if deadline is None else min(0.5, max(0.0, deadline - now))
            if not sel.get_map():
                time.sleep(min(wait, 0.05))
                continue
            for key, _ in sel.select(wait):
                if key.data is None:
                    try:
                        pos += os.write(key.fd, stdin[pos : pos + 65536])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        pos = len(stdin)
                    if pos >= len(stdin):
                        sel.unregister(key.fd)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fd)
        sel.close()
        if proc.poll() is None:
            kill_group(pgid, proc)
        code = proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        after = counters()
        oom = before[0] is not None and after[0] is not None and after[0] > before[0]
        pids = before[1] is not None and after[1] is not None and after[1] > before[1]
        return {
            "exitCode": code,
            "stdout": b64(bytes(out.kept)),
            "stderr": b64(bytes(err.kept)),
            "stdoutDropped": out.dropped,
            "stderrDropped": err.dropped,
            "timedOut": timed_out,
            "cancelled": state["cancelled"],
            "oomKilled": oom,
            "pidsLimitHit": pids,
            "countersAvailable": before[0] is not None,
        }
    finally:
        with _procs_lock:
            _procs.pop(rid, None)


OPS = {"read": op_read, "write": op_write, "glob": op_glob, "exec": op_exec}


def handle(req):
    rid = req.get("id")
    try:
        fn = OPS.get(req.get("op"))
        if fn is None:
            raise ValueError("unknown op %r" % (req.get("op"),))
        result = fn(req)
        send({"id": rid, "ok": True, "result": result})
    except Exception as exc:
        send({"id": rid, "ok": False, "error": {"pythonType": type(exc).__name__, "message": str(exc)}})


def cancel(target):
    with _procs_lock:
        state = _procs.get(target)
    if state is not None:
        state["cancelled"] = True
        kill_group(state["pgid"], state["proc"])


def main():
    try:
        os.chdir(WORKDIR)
    except OSError:
        pass
    send({"hello": "frognano-tool-helper", "version": VERSION, "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        header = read_exact(4)
        if header is None:
            break
        (n,) = struct.unpack(">I", header)
        if n > MAX_REQUEST:
            sys.stderr.write("request frame too large: %d\n" % n)
            sys.exit(2)
        body = read_exact(n)
        if body is None:
            break
        req = json.loads(body.decode("utf-8"))
        if req.get("op") == "cancel":
            cancel(req.get("target"))
            continue
        try:
            threading.Thread(target=handle, args=(req,), daemon=True).start()
        except Exception as exc:
            send({"id": req.get("id"), "ok": False, "error": {"pythonType": type(exc).__name__, "message": str(exc)}})
    # The host went away: leave no command of ours running.
    with _procs_lock:
        states = list(_procs.values())
    for state in states:
        kill_group(state["pgid"], state["proc"])
    os._exit(0)  # daemon threads may hold the stdout lock; skip interpreter shutdown


main()
`;
