// The tool helper's request loop: the operations by name, one thread per request, cancel,
// the `--once` mode LocalSandbox uses, and the hello the host waits for.
export const HELPER_DISPATCH = String.raw`

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
