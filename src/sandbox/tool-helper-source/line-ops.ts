// The tool helper's Read and Edit: a file's numbered lines, streamed so only the observation
// is ever held, and the exact-text edit.
export const HELPER_LINE_OPS = String.raw`

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
`;
