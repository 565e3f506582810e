// The tool helper's exec: one command in its own process group, its output capped, its
// timeout and cancel, the memory and pids counters, and the strays it leaves killed.
export const HELPER_EXEC_OP = String.raw`

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
`;
