"""Faults in topod's state directory, for t_topod_journal.py and the drill
(tests/drill/attack.py): deltas made here (one NodeDescription changed, any
base identity), deliveries, and a topod that is killed with SIGKILL and
restarted, counting the plain OKs a restart did not serve."""
import os
import signal
import struct

from snapdecode import crc32c
from topodtest import Topod, deliver

SM, TS0 = 0x77, 1700000000000000


def mkdelta(base, gen, node, desc, sm=SM, ts=None):
    """A delta (docs/snapshot-format.md) from base = (generation, nnodes,
    engine[, sm_guid, timestamp]) to generation gen (same SM, taken
    ts, default TS0 + gen): node's NodeDescription becomes desc."""
    bgen, nnodes, engine = base[:3]
    bsm, bts = base[3:5] if len(base) > 3 else (SM, TS0 + bgen)
    ts = TS0 + gen if ts is None else ts
    payload = struct.pack("<QQQII", bgen, bsm, bts, nnodes, 0) + bytes([len(engine)]) + engine
    payload += struct.pack("<IIB", 1, node, len(desc)) + desc + struct.pack("<II", 0, 0)
    h = bytearray(b"TOPODLTA" + struct.pack("<IIQQIIQQQ", 1, 64, gen, len(payload), crc32c(payload), 0, sm, gen, ts))
    struct.pack_into("<I", h, 36, crc32c(bytes(h)))
    return bytes(h) + payload


class Run:
    """One topod on a state directory, with what it acknowledged."""

    def __init__(self, state, d, args=("--history", "1")):
        self.state, self.d, self.args = state, d, args
        self.replies = []
        self.t = None
        self.start()

    def start(self):
        self.t = Topod(*self.args, state_dir=self.state, d=self.d)

    def send(self, gen, data):
        r = deliver(self.t.ingest, data)
        self.replies.append((gen, r))
        return r

    def crash(self):
        """SIGKILL and restart; returns (served generation, plain OKs of a
        generation above it: acknowledged and lost)."""
        self.t.p.send_signal(signal.SIGKILL)
        self.t.p.wait(10)
        self.start()
        served = int(self.t.info()["generation"])
        lost = len({g for g, r in self.replies if r == "OK %d" % g and g > served})
        return served, lost


def damage(path, mode, other=None):
    """flip: bytes flipped past the header; truncate: half the file;
    replace: the bytes of the file other (another generation's entry)."""
    b = bytearray(open(path, "rb").read())
    if mode == "flip":
        for i in range(70, len(b), 7):
            b[i] ^= 0x5A
    elif mode == "truncate":
        b = b[:len(b) // 2]
    else:
        b = bytearray(open(other, "rb").read())
    with open(path, "wb") as f:
        f.write(b)


