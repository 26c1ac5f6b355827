"""The tables a streamed run is computed on: what :mod:`cxlsim.protocol.stream` fills
from the sources, links, devices, paths and credit pools and reads back, and
:mod:`cxlsim.protocol._stream_kernel` runs on -- one row per object, these columns.

Kept apart from both so that the dependency runs one way: ``stream`` imports the kernel,
and both import this layout.
"""

#: Source kinds: an open-loop Poisson stream, a closed loop of miss slots.
POISSON, SLOTS = 0, 1

#: Columns of ``links`` (float): ns per cachemem byte, latency, free at, busy ns, bytes
#: sent, exclusive (1: one sender, reserved ahead; 0: shared, entered by events).
L_NSPB, L_LAT, L_FREE, L_BUSY, L_SENT, L_EXCL = range(6)
#: Columns of ``link_q`` (int): a wake-up pending, first and last message waiting.
Q_WAKING, Q_HEAD, Q_TAIL = range(3)
#: Columns of ``devs`` (float): request time, controller free at, ns per byte, free at,
#: latency, accesses, exclusive (1: one path; 0: shared, entered by events).
D_RT, D_CTRL, D_NSPB, D_FREE, D_LAT, D_ACC, D_EXCL = range(7)
#: Columns of ``paths_f`` (float): latency before the first link, after the device, credit
#: return latency, wire bytes of M2S Req, M2S RwD, S2M NDR, S2M DRS.
P_HEAD, P_AFTER_DEV, P_CREDIT_RET, P_REQ, P_RWD, P_NDR, P_DRS = range(7)
#: Columns of ``paths_i`` (int): device, credits held to completion, read pool, write
#: pool, down stages [from, to), up stages [from, to), completions.
P_DEV, P_HELD, P_POOL_R, P_POOL_W, P_DOWN0, P_DOWN1, P_UP0, P_UP1, P_DONE = range(9)
#: Columns of ``pools`` (int): available, returns' offset in ``ret``, returns pending,
#: a wake-up pending, stalls, first and last waiting transaction.
C_AVAIL, C_OFF, C_CNT, C_WAKING, C_STALLS, C_HEAD, C_TAIL = range(7)
#: Columns of ``srcs`` (int): kind, requests, slots, offset of its draws, its paths
#: [from, to) in ``src_paths``.
S_KIND, S_COUNT, S_SLOTS, S_DRAW, S_PATH0, S_PATH1 = range(6)
