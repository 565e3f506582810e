// The tool helper's whole-file operations: read, write and glob (with the display paths
// Glob shows).
export const HELPER_FILE_OPS = String.raw`

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
`;
