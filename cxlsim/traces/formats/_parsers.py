"""The compiled line parsers of the text formats, and the numba helpers they share.

They live in one module because numba's on-disk cache only notices changes to the file
of the function it compiled: a helper edited in another module would leave stale
machine code behind. Every parser has the same signature::

    parse(buf, i, e, k, out, params, state) -> records written at index k, or -1 for a
                                              malformed line

where ``buf[i:e]`` is one line without its end-of-line and trailing blanks, ``out`` the
output columns (time, addr, op, size, thread, page_type, region, weight), ``params`` the
format's settings and ``state`` what carries from line to line (clocks).
:func:`scan_block` runs one of them, chosen by number, over a block of whole lines; the
parsers are inlined into it (a call per line cost as much as the parsing).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_TEN = np.uint64(10)
_FOUR = np.uint64(4)
_SIXTY = np.uint64(60)
#: Value of each byte as a hex digit, -1 if it is not one.
_HEX_DIGIT = np.full(256, -1, np.int64)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_DIGIT[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX_DIGIT[_c] = 10 + _i

# Byte values.
_LF, _CR, _TAB, _SPACE = 10, 13, 9, 32
_HASH, _COMMA, _COLON, _DOT, _SLASH, _EQUALS = 35, 44, 58, 46, 47, 61
_LBRACKET = 91


@njit(cache=True)
def _is_blank(c):
    return c == _SPACE or c == _TAB


@njit(cache=True)
def _skip_blanks(buf, i, e):
    while i < e and _is_blank(buf[i]):
        i += 1
    return i


@njit(cache=True)
def _hex(buf, i, e):
    """Hex digits at ``i``: (value, end); end is ``i`` if none, -1 if over 64 bits.
    (A table, not comparisons: random hex digits defeat branch prediction, 4x slower.)"""
    value = np.uint64(0)
    j = i
    while j < e:
        d = _HEX_DIGIT[buf[j]]
        if d < 0:
            break
        if value >> _SIXTY:
            return value, -1
        value = (value << _FOUR) | np.uint64(d)
        j += 1
    return value, j


@njit(cache=True)
def _hex_0x(buf, i, e):
    """Hex digits with an optional 0x prefix."""
    if i + 1 < e and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
        value, j = _hex(buf, i + 2, e)
        return value, (j if j != i + 2 else i)
    return _hex(buf, i, e)


@njit(cache=True)
def _dec(buf, i, e):
    """Decimal digits at ``i``: (value, end); end is ``i`` if none, -1 if over 64 bits."""
    value = np.uint64(0)
    j = i
    while j < e and 48 <= buf[j] <= 57:
        d = np.uint64(buf[j] - 48)
        if value > (_U64_MAX - d) // _TEN:
            return value, -1
        value = value * _TEN + d
        j += 1
    return value, j


@njit(cache=True)
def _number(buf, i, e):
    """Decimal, or hexadecimal after 0x."""
    if i + 1 < e and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
        return _hex_0x(buf, i, e)
    return _dec(buf, i, e)


@njit(cache=True)
def _token_end(buf, i, e):
    while i < e and not _is_blank(buf[i]):
        i += 1
    return i


@njit(cache=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True)
def _word_at(buf, i, e, word):
    """True when the bytes at ``i`` spell ``word`` (lower-case), ignoring case."""
    if i + len(word) > e:
        return False
    for m in range(len(word)):
        if _lower(buf[i + m]) != word[m]:
            return False
    return True


@njit(cache=True, inline="always")
def _record(out, k, t, a, o, s):
    """Write record ``k``'s time, address, operation (0 read, 1 write) and size."""
    out[0][k] = t
    out[1][k] = a
    out[2][k] = o
    out[3][k] = s


# valgrind lackey --trace-mem=yes: "I  04011d0,3", " L 1ffefffd88,8", " S ...", " M ...".
# state[0]: instructions seen. Lines starting "==" are valgrind's own messages.
@njit(cache=True, inline="always")
def parse_lackey(buf, i, e, k, out, params, state):
    j = _skip_blanks(buf, i, e)
    if buf[j] == _EQUALS and j + 1 < e and buf[j + 1] == _EQUALS:
        return 0
    kind = buf[j]
    if not (kind == 73 or kind == 76 or kind == 83 or kind == 77):  # I L S M
        return -1
    if j + 1 >= e or not _is_blank(buf[j + 1]):
        return -1
    start = _skip_blanks(buf, j + 1, e)
    a, p = _hex(buf, start, e)
    if p <= start or p >= e or buf[p] != _COMMA:
        return -1
    s, q = _dec(buf, p + 1, e)
    if q != e or q == p + 1 or s > np.uint64(0xFFFFFFFF):
        return -1
    if kind == 73:
        state[0] += 1
        return 0
    t = state[0] - 1 if state[0] > 0 else 0
    written = 0
    if kind != 83:  # L or M: a load
        _record(out, k, t, a, 0, s)
        written = 1
    if kind != 76:  # S or M: a store
        _record(out, k + written, t, a, 1, s)
        written += 1
    return written


# Intel Pin pinatrace: "0x7f1e2c0b1a10: R 0x7ffd5a8e6f08"; "#eof" and other "#" lines skipped.
# state[0]: records so far (the sequence clock).
@njit(cache=True, inline="always")
def parse_pin(buf, i, e, k, out, params, state):
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    _, p = _hex_0x(buf, j, e)
    if p <= j or p >= e or buf[p] != _COLON:
        return -1
    p = _skip_blanks(buf, p + 1, e)
    if p >= e:
        return -1
    kind = buf[p]
    if not (kind == 82 or kind == 87) or p + 1 >= e or not _is_blank(buf[p + 1]):  # R W
        return -1
    start = _skip_blanks(buf, p + 1, e)
    a, q = _hex_0x(buf, start, e)
    if q <= start or q != e:
        return -1
    _record(out, k, state[0], a, 1 if kind == 87 else 0, 0)
    state[0] += 1
    return 1


# Ramulator memory traces: "0x12345680 R" / "0x4cbd56c0 W" (Ramulator) or
# "LD 0x12345680" / "ST 0x..." (Ramulator 2 read/write traces). state[0]: sequence clock.
@njit(cache=True, inline="always")
def parse_ramulator(buf, i, e, k, out, params, state):
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    write = -1
    if _word_at(buf, j, e, b"ld") or _word_at(buf, j, e, b"st"):
        write = 1 if _lower(buf[j]) == 115 else 0
        start = _skip_blanks(buf, j + 2, e)
        if start == j + 2:
            return -1
        a, p = _hex_0x(buf, start, e)
        if p <= start or p != e:
            return -1
    else:
        a, p = _hex_0x(buf, j, e)
        if p <= j or p >= e or not _is_blank(buf[p]):
            return -1
        q = _skip_blanks(buf, p, e)
        if q + 1 != e:
            return -1
        kind = buf[q]
        if kind == 82 or kind == 114:
            write = 0
        elif kind == 87 or kind == 119:
            write = 1
        else:
            return -1
    _record(out, k, state[0], a, write, 0)
    state[0] += 1
    return 1


# Ramulator CPU traces: "<non-memory instructions> <read address> [<writeback address>]".
# state[0]: instructions so far (the read is the instruction after the bubbles).
@njit(cache=True, inline="always")
def parse_ramulator_cpu(buf, i, e, k, out, params, state):
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    bubbles, p = _dec(buf, j, e)
    if p <= j or p >= e or not _is_blank(buf[p]):
        return -1
    start = _skip_blanks(buf, p, e)
    a, q = _number(buf, start, e)
    if q <= start or (q < e and not _is_blank(buf[q])):
        return -1
    t = np.uint64(state[0]) + bubbles
    _record(out, k, t, a, 0, 0)
    written = 1
    if q < e:
        start = _skip_blanks(buf, q, e)
        wb, r = _number(buf, start, e)
        if r <= start or r != e:
            return -1
        _record(out, k + 1, t, wb, 1, 0)
        written = 2
    state[0] = t + np.uint64(1)
    return written


# perf mem report -D [-x SEP]: "PID TID IP ADDR [PHYS ADDR] [PAGE SIZE] WEIGHT DSRC SYMBOL".
# params: [tid column, address column, dsrc column, period]; state[0]: sequence clock.
# The operation is in the low bits of DSRC: 0x02 load, 0x04 store (PERF_MEM_OP_*).
@njit(cache=True, inline="always")
def parse_perf_mem(buf, i, e, k, out, params, state):
    thread, weight = out[4], out[7]
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    tid = np.uint64(0)
    a = np.uint64(0)
    dsrc = np.uint64(0)
    last = max(params[0], max(params[1], params[2]))
    column = 0
    p = j
    while column <= last:
        while p < e and (_is_blank(buf[p]) or buf[p] == _COMMA):
            p += 1
        if p >= e:
            return -1
        if column == params[0]:
            tid, q = _dec(buf, p, e)
        elif column == params[1] or column == params[2]:
            value, q = _hex_0x(buf, p, e)
            if column == params[1]:
                a = value
            else:
                dsrc = value
        else:
            q = p
            while q < e and not (_is_blank(buf[q]) or buf[q] == _COMMA):
                q += 1
        if q <= p or (q < e and not (_is_blank(buf[q]) or buf[q] == _COMMA)):
            return -1
        p = q
        column += 1
    if dsrc & np.uint64(0x2):
        write = 0
    elif dsrc & np.uint64(0x4):
        write = 1
    else:
        return -1
    _record(out, k, state[0], a, write, 0)
    thread[k] = tid
    weight[k] = params[3]
    state[0] += 1
    return 1


# perf script: "COMM TID [CPU] SECONDS.FRACTION: [PERIOD] EVENT: ADDR ...", e.g. from
# perf script -F comm,tid,cpu,time,period,event,addr. The first token shaped like a time
# stamp anchors the line (a command name may hold blanks); "load" or "store" in the event
# name, or else later in the line (data_src), gives the operation.
# params: [period for lines without one].
@njit(cache=True, inline="always")
def parse_perf_script(buf, i, e, k, out, params, state):
    thread, weight = out[4], out[7]
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    before = -1  # start of the token before the previous one
    previous = -1
    p = j
    stamp_end = -1
    secs = np.uint64(0)
    frac = np.uint64(0)
    digits = 0
    while p < e:
        end = _token_end(buf, p, e)
        whole, q = _dec(buf, p, end)
        if q > p and q < end and buf[q] == _DOT:
            part, r = _dec(buf, q + 1, end)
            if r > q + 1 and r + 1 == end and buf[r] == _COLON:
                secs, frac, digits, stamp_end = whole, part, r - q - 1, end
                break
        before = previous
        previous = p
        p = _skip_blanks(buf, end, e)
    if stamp_end < 0 or previous < 0:
        return -1
    tid_at = before if buf[previous] == _LBRACKET else previous  # skip "[cpu]"
    if tid_at < 0:
        return -1
    tid, q = _dec(buf, tid_at, e)
    if q > tid_at and q < e and buf[q] == _SLASH:  # "pid/tid"
        tid, q = _dec(buf, q + 1, e)
    if q <= tid_at or q >= e or not _is_blank(buf[q]) or tid > np.uint64(0xFFFFFFFF):
        return -1
    while digits > 9:
        frac //= _TEN
        digits -= 1
    while digits < 9:
        frac *= _TEN
        digits += 1
    p = _skip_blanks(buf, stamp_end, e)
    end = _token_end(buf, p, e)
    period = np.uint64(params[0])
    value, q = _dec(buf, p, end)
    if q == end and q > p:
        period = value
        p = _skip_blanks(buf, end, e)
        end = _token_end(buf, p, e)
    if end <= p or buf[end - 1] != _COLON or period > np.uint64(0xFFFFFFFF):
        return -1
    event, event_end = p, end
    p = _skip_blanks(buf, end, e)
    a, q = _hex_0x(buf, p, e)
    if q <= p or (q < e and not _is_blank(buf[q])):
        return -1
    write = _load_or_store(buf, event, event_end)
    if write < 0:
        write = _load_or_store(buf, q, e)
    if write < 0:
        return -1
    _record(out, k, secs * np.uint64(1000000000) + frac, a, write, 0)
    thread[k] = tid
    weight[k] = period
    return 1


@njit(cache=True)
def _load_or_store(buf, i, e):
    """0 if "load" comes first in buf[i:e], 1 if "store" does, -1 if neither is there."""
    while i < e:
        if _word_at(buf, i, e, b"load"):
            return 0
        if _word_at(buf, i, e, b"store"):
            return 1
        i += 1
    return -1


# CSV with a header naming the columns; params: [number of columns, then each column's
# field code: its index in native.FIELDS]; state[0]: sequence clock without a time column.


@njit(cache=True, inline="always")
def parse_csv(buf, i, e, k, out, params, state):
    time, addr, op, size, thread, page_type, region, weight = out
    j = _skip_blanks(buf, i, e)
    if buf[j] == _HASH:
        return 0
    has_time = False
    p = j
    for column in range(params[0]):
        if column:
            if p >= e or buf[p] != _COMMA:
                return -1
            p += 1
        p = _skip_blanks(buf, p, e)
        code = params[column + 1]
        if code == 2:  # op: R or W
            if p >= e:
                return -1
            c = _lower(buf[p])
            if c != 114 and c != 119:
                return -1
            value = np.uint64(1 if c == 119 else 0)
            q = p + 1
        elif code == 5:  # page_type: anon or file
            if _word_at(buf, p, e, b"anon"):
                value = np.uint64(0)
            elif _word_at(buf, p, e, b"file"):
                value = np.uint64(1)
            else:
                return -1
            q = p + 4
        else:
            value, q = _number(buf, p, e)
            if q <= p:
                return -1
        p = _skip_blanks(buf, q, e)
        if p < e and buf[p] != _COMMA:
            return -1
        if code == 0:
            time[k] = value
            has_time = True
        elif code == 1:
            addr[k] = value
        elif code == 2:
            op[k] = value
        elif code == 3:
            if value > np.uint64(0xFFFFFFFF):
                return -1
            size[k] = value
        elif code == 4:
            if value > np.uint64(0xFFFFFFFF):
                return -1
            thread[k] = value
        elif code == 5:
            page_type[k] = value
        elif code == 6:
            if value > np.uint64(0xFFFF):
                return -1
            region[k] = value
        else:
            if value > np.uint64(0xFFFFFFFF):
                return -1
            weight[k] = value
    if p != e:
        return -1
    if not has_time:
        time[k] = state[0]
        state[0] += 1
    return 1


# Parser numbers for scan_block.
LACKEY, PIN, RAMULATOR, RAMULATOR_CPU, PERF_MEM, PERF_SCRIPT, CSV = range(7)


@njit(cache=True)
def scan_block(buf, parser, out, params, state, bad, stop):
    """Parse every line of ``buf`` with parser number ``parser``; return (records, bad
    lines). The start offsets of malformed lines go to ``bad``; with ``stop`` the scan
    ends at the first one. (One function chooses the parser by number: numba caches it
    reliably, which it does not for functions passed as arguments.)"""
    n = len(buf)
    i = 0
    k = 0
    nbad = 0
    while i < n:
        e = i
        while e < n and buf[e] != _LF:
            e += 1
        following = e + 1
        while e > i and (buf[e - 1] == _CR or _is_blank(buf[e - 1])):
            e -= 1
        if _skip_blanks(buf, i, e) < e:
            if parser == LACKEY:
                written = parse_lackey(buf, i, e, k, out, params, state)
            elif parser == PIN:
                written = parse_pin(buf, i, e, k, out, params, state)
            elif parser == RAMULATOR:
                written = parse_ramulator(buf, i, e, k, out, params, state)
            elif parser == RAMULATOR_CPU:
                written = parse_ramulator_cpu(buf, i, e, k, out, params, state)
            elif parser == PERF_MEM:
                written = parse_perf_mem(buf, i, e, k, out, params, state)
            elif parser == PERF_SCRIPT:
                written = parse_perf_script(buf, i, e, k, out, params, state)
            else:
                written = parse_csv(buf, i, e, k, out, params, state)
            if written < 0:
                bad[nbad] = i
                nbad += 1
                if stop:
                    break
            else:
                k += written
        i = following
    return k, nbad

