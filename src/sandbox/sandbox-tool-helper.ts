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

export const TOOL_HELPER_PROTOCOL_VERSION = 1;
export const TOOL_HELPER_HELLO = 'frognano-tool-helper';

export const TOOL_HELPER_SOURCE = String.raw`
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
    root = req.get("displayRoot")
    for m in glob.glob(req["pattern"], recursive=True):
        if os.path.isfile(m):
            if root is None:
                out.append({"path": m, "realPath": os.path.realpath(m)})
            else:
                out.append(display_path(os.path.realpath(m), root, m))
    if root is None:
        return {"matches": out}
    # Leaf's Glob sorts what it shows and lists the first limit of them: only those cross to the
    # host, with the count, so a tree of a million files costs the host one bounded reply.
    out.sort()
    return {"shown": out[: int(req["limit"])], "total": len(out)}


def display_path(real, root, fallback):
    import pathlib
    real = str(pathlib.PurePosixPath(real))
    base = str(pathlib.PurePosixPath(root))
    if real == base:
        return "."
    prefix = base if base.endswith("/") else base + "/"
    return real[len(prefix):] if real.startswith(prefix) else str(pathlib.PurePosixPath(fallback))


def digits_sum(a, b):
    # Sum of len(str(n)) for n in a..b (a >= 1).
    total, lo, width = 0, a, len(str(a))
    while lo <= b:
        hi = min(b, 10 ** width - 1)
        total += (hi - lo + 1) * width
        lo, width = hi + 1, width + 1
    return total


def count_seps(text, start, end):
    return sum(text.count(c, start, end) for c in LINE_SEPS)


def nth_sep(text, start, k):
    # Index of the k-th line separator in text[start:], or -1.
    end = len(text)
    if count_seps(text, start, end) < k:
        return -1
    lo, hi = start, end - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if count_seps(text, start, mid + 1) >= k:
            hi = mid
        else:
            lo = mid + 1
    return lo


class NumberedLines(object):
    """Leaf's Read body ("\n".join("%d. %s" % (n, line) ...)) over streamed text: keeps the
    first budget code points and counts the rest, as if the whole body had been built."""

    def __init__(self, first, last, budget):
        self.first, self.last, self.room = first, last, budget
        self.line = 0  # lines started so far
        self.open = False  # the last started line has no separator yet
        self.kept = []
        self.total = 0
        self.done = False

    def emit(self, s):
        self.total += len(s)
        if self.room > 0 and s:
            piece = s[: self.room]
            self.kept.append(piece)
            self.room -= len(piece)

    def advance(self, text, start, end, counted):
        # Consume text[start:end] in bulk; counted: its lines are in the body (all past the first).
        if end <= start:
            return
        seps = count_seps(text, start, end)
        closed = text[end - 1] in LINE_SEPS
        starts = (0 if self.open else 1) + seps - (1 if closed else 0)
        if counted:
            # Per line "N. " and a joining newline, except before the first line of the body.
            self.total += (end - start - seps) + 3 * starts
            if starts > 0:
                self.total += digits_sum(self.line + 1, self.line + starts)
                if self.line < self.first:
                    self.total -= 1
        self.line += starts
        self.open = not closed

    def feed(self, text):
        i, n = 0, len(text)
        while i < n and not self.done:
            if self.line < self.first - 1 or (self.line == self.first - 1 and self.open):
                k = self.first - 1 - self.line + (1 if self.open else 0)
                p = nth_sep(text, i, k)
                if p < 0:
                    self.advance(text, i, n, False)
                    return
                self.advance(text, i, p + 1, False)
                i = p + 1
                continue
            if self.room <= 0:
                if self.last is None:
                    self.advance(text, i, n, True)
                    return
                if self.line > self.last or (self.line == self.last and not self.open):
                    self.done = True
                    return
                p = nth_sep(text, i, self.last - self.line + (1 if self.open else 0))
                if p < 0:
                    self.advance(text, i, n, True)
                    return
                self.advance(text, i, p + 1, True)
                self.done = True
                return
            if not self.open:
                if self.last is not None and self.line + 1 > self.last:
                    self.done = True
                    return
                self.line += 1
                self.open = True
                self.emit(("\n" if self.line > self.first else "") + "%d. " % self.line)
                continue
            j = i
            while j < n and text[j] not in LINE_SEPS:
                j += 1
                if j - i > self.room:
                    break
            if j < n and text[j] not in LINE_SEPS:
                # Past the budget inside this line: the rest is only counted.
                self.emit(text[i:j])
                i = j
                continue
            self.emit(text[i:j])
            if j >= n:
                return
            self.open = False
            i = j + 1


def op_read_lines(req):
    # Leaf's Read: read_text(encoding="utf-8", errors="replace"), splitlines(), numbered lines
    # from offset (limit <= 0: to the end). Returns the body's first maxChars code points and
    # its full length in code points.
    path = req["path"]
    first = max(1, int(req["offset"]))
    limit = int(req["limit"])
    body = NumberedLines(first, first - 1 + limit if limit > 0 else None, int(req["maxChars"]))
    decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), True)
    with open(path, "rb", buffering=0, opener=nonblocking) as f:
        regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        seen = 0
        while not body.done:
            try:
                chunk = f.read(READ_CHUNK)
            except BlockingIOError:
                chunk = None
            if not chunk:
                break
            seen += len(chunk)
            if not regular and seen > MAX_READ:
                # An endless device: Python would grow until MemoryError.
                raise MemoryError()
            if seen > MAX_STREAM:
                raise OSError(errno.EFBIG, "File too large for the sandbox tool helper (limit %d bytes)" % MAX_STREAM, path)
            body.feed(decoder.decode(chunk))
        if not body.done:
            body.feed(decoder.decode(b"", True))
    return {"text": "".join(body.kept), "totalChars": body.total, "realPath": os.path.realpath(path)}


def op_edit(req):
    # Leaf's Edit after its argument checks: read_text, count, replace, write_text (encoded
    # before the file is opened, so a bad replacement leaves the file as it was).
    path = req["path"]
    old, new = req["old"], req["new"]
    with open(path, "rb", opener=nonblocking) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_READ:
            raise OSError(errno.EFBIG, "File too large for the sandbox transport (%d bytes; limit %d)" % (size, MAX_READ), path)
        data = f.read(MAX_READ + 1) or b""
    if len(data) > MAX_READ:
        raise OSError(errno.EFBIG, "File too large for the sandbox transport (limit %d bytes)" % MAX_READ, path)
    text = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), True).decode(data, True)
    del data
    count = text.count(old)
    if count == 0:
        raise ValueError("old_string was not found")
    if count != 1 and not req.get("replaceAll"):
        raise ValueError("old_string matched %d times; set replace_all=true or use a more specific old_string" % count)
    out = text.replace(old, new).encode("utf-8")
    del text
    with open(path, "wb", opener=nonblocking) as f:
        f.write(out)
    return {"count": count, "realPath": os.path.realpath(path)}


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


def proc_table():
    # pid -> (ppid, pgid, state, starttime) for every process visible in this pid namespace.
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                text = f.read()
            fields = text[text.rfind(")") + 2 :].split()
            table[int(name)] = (int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
        except (OSError, ValueError, IndexError):
            continue
    return table


def subtree(table, roots):
    children = {}
    for pid, info in table.items():
        children.setdefault(info[0], []).append(pid)
    seen, stack = set(), list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stack.extend(children.get(pid, ()))
    return seen


def kill_strays(state):
    # After a timeout or cancel: processes that left the command's group (setsid, a daemon,
    # an escaped fork bomb) are found in the container's process table and killed. Spared:
    # init, the container's main process (init's oldest child), this helper, other
    # docker exec sessions (parent outside the namespace) and other running commands.
    me = os.getpid()
    refused = set()
    for _ in range(200):
        table = proc_table()
        keep = {1, me}
        kids = sorted((info[3], pid) for pid, info in table.items() if info[0] == 1)
        if kids:
            keep.add(kids[0][1])
        keep |= subtree(table, [pid for pid, info in table.items() if info[0] == 0 and pid not in (1, me)])
        with _procs_lock:
            others = [s["pgid"] for s in _procs.values() if s is not state]
        keep |= subtree(table, others)
        victims = [
            pid
            for pid, info in table.items()
            if pid not in keep and pid not in refused and info[1] not in others and info[2] not in ("Z", "X")
        ]
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except PermissionError:
                refused.add(pid)
            except ProcessLookupError:
                pass
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
    state = {"proc": proc, "pgid": pgid, "cancelled": False, "killStrays": bool(req.get("killStrays"))}
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
                if req.get("killStrays"):
                    kill_strays(state)
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


OPS = {
    "read": op_read,
    "read_lines": op_read_lines,
    "edit": op_edit,
    "write": op_write,
    "glob": op_glob,
    "exec": op_exec,
}


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
        if state["killStrays"]:
            kill_strays(state)


def once():
    # One request from stdin, answered on stdout, then exit (LocalSandbox's Read and Edit).
    header = read_exact(4)
    if header is None:
        return
    (n,) = struct.unpack(">I", header)
    body = read_exact(n) if n <= MAX_REQUEST else None
    if body is None:
        sys.exit(2)
    handle(json.loads(body.decode("utf-8")))


def main():
    try:
        os.chdir(WORKDIR)
    except OSError:
        pass
    if "--once" in sys.argv[2:]:
        once()
        return
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
