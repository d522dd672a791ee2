#!/usr/bin/env python3
"""Write the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/<name>.

Each seed is a valid exchange as the backends write it (the formats are spelled out in the
headers the targets name: tcp_internal.h, shm_layout.h, ib_internal.h, agree.c, check_desc.h,
boot_store.h), plus a few edge cases. Deterministic: running it again rewrites the same files.
  tests/fuzz/corpus/gen_seeds.py [OUTDIR]   (default: the directory of this script)
"""
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
seeds = {}


def seed(target, name, data):
    seeds.setdefault(target, []).append((name, bytes(data)))


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


# ---- tcp: set-up (8 bytes, see tcp_stream_fuzz.c), then the stream ----
def tcp_msg(tag, payload): return u64(tag) + u64(len(payload)) + payload
def tcp_hdr32(w0, kind, length, w2, w3): return u64(w0) + u64(kind << 56 | length) + u64(w2) + u64(w3)


K_PUT, K_GET, K_SIG_ADD, K_SIG_SET, K_ACK, K_GET_RESP, K_LMSG, K_CHUNK = 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xB1, 0xB2
KEY = 1 << 32  # slot 0, generation 1: the harness's registered range
setup = bytes([0x04 | 0x40, 10, 0, 4, 0, 0, 0, 0])  # 4 receives (caps 80, 0, 32, 0), take the rest after
seed("tcp_stream_fuzz", "messages", setup + tcp_msg(0, b"hello") + tcp_msg(1, b"") +
     tcp_msg(2, bytes(range(40))) + tcp_msg(3, b"x") + tcp_msg(0, b"second to tag 0") + tcp_msg(5, b"other tag"))
seed("tcp_stream_fuzz", "split", bytes([0x80 | 0x02, 4, 4, 0, 0, 0, 0, 2]) + tcp_msg(0, b"abcdefgh") +
     tcp_msg(1, b"0123456789") + tcp_msg(0, b"tail"))
data = bytes((i * 7) & 0xff for i in range(100))
seed("tcp_stream_fuzz", "striped", bytes([0x02, 0, 100, 0, 0, 0, 0, 0]) + tcp_hdr32(1, K_LMSG, 100, 1, 0) +
     tcp_hdr32(1, K_CHUNK, 60, 0, 0) + data[:60] + tcp_msg(0, b"between") + tcp_hdr32(1, K_CHUNK, 40, 60, 0) + data[60:])
seed("tcp_stream_fuzz", "striped_unexpected", bytes([0x40, 0, 0, 0, 0, 0, 0, 0]) + tcp_hdr32(3, K_LMSG, 20, 5, 0) +
     tcp_hdr32(5, K_CHUNK, 20, 0, 0) + data[:20] + tcp_hdr32(2, K_LMSG, 8, 6, 0) + tcp_hdr32(6, K_CHUNK, 8, 0, 0) + data[:8])
seed("tcp_stream_fuzz", "rma_target", bytes(8) + tcp_hdr32(KEY, K_PUT, 16, 8, 0) + bytes(range(16)) +
     tcp_hdr32(KEY, K_GET, 0, 0, 32) + tcp_hdr32(KEY, K_SIG_ADD, 0, 16, 5) + tcp_hdr32(KEY, K_SIG_SET, 0, 24, 9) +
     tcp_msg(1, b"after"))
seed("tcp_stream_fuzz", "rma_answers", bytes([0x08 | 0x10 | 0x20, 0, 0, 0, 0, 0, 0, 0]) +
     tcp_hdr32(0, K_GET_RESP, 64, 0, 0) + bytes(range(64)) + tcp_hdr32(0, K_ACK, 0, 0, 2))
# two rails (s[7] bit 7): a chunk, a re-sent copy of it (dropped), a message, an ack of an id not sent
K_LACK = 0xB3
seed("tcp_stream_fuzz", "two_rails", bytes([0x03, 0, 100, 2, 0, 0, 0, 0x80]) + tcp_hdr32(1, K_LMSG, 100, 1, 0) +
     tcp_hdr32(1, K_CHUNK, 100, 0, 0) + data + tcp_hdr32(1, K_CHUNK, 100, 0, 1) + data + tcp_msg(2, b"after") +
     tcp_hdr32(7, K_LACK, 0, 0, 0))
seed("tcp_stream_fuzz", "huge_length", bytes([0x01, 2, 0, 0, 0, 0, 0, 0]) + u64(0) + u64(1 << 55))
seed("tcp_stream_fuzz", "large_unexpected", bytes(8) + u64(9) + u64(1 << 20) + bytes(300))
seed("tcp_blob_fuzz", "address", bytes([1, 4]) + struct.pack(">H", 40000) + bytes([127, 0, 0, 1]))
seed("tcp_blob_fuzz", "address_rails", bytes([1, 4]) + struct.pack(">H", 40000) + bytes([127, 0, 0, 1]) +
     bytes([127, 0, 0, 2]) + bytes([127, 0, 0, 3]))
seed("tcp_blob_fuzz", "rkey", u32(0x4b524354) + u32(1) + u64(7) + u64(KEY) + u64(4096))

# ---- tcp handshake: a mode byte (see tcp_handshake_fuzz.c), then the hello and proof, or the
# initiator's hello fields and the acceptor's answer ----
def tcp_hello(flags, sender, receiver, token=0, nonce=bytes(range(32))):
    return u32(0x50544354) + u16(3) + u16(flags) + u64(sender) + u64(receiver) + nonce + u64(token)


def tcp_ack(result, sender, receiver): return u32(0x50544354) + u16(3) + u16(result) + u64(sender) + u64(receiver)


seed("tcp_handshake_fuzz", "acceptor_keyed", bytes([0x02 | 0x04]) + tcp_hello(0x0100 | 3, 7, 1000, 0x1234) + bytes(32))
seed("tcp_handshake_fuzz", "acceptor_data", bytes([0x04]) + tcp_hello(0x8000 | 2, 7, 1000, 0x1234) + bytes(32))
seed("tcp_handshake_fuzz", "acceptor_raw_proof", bytes([0x02]) + tcp_hello(0x0100, 999, 1000) + bytes(range(100, 132)))
seed("tcp_handshake_fuzz", "acceptor_near_miss", bytes([0x02 | 0x04 | 0x08 | 0x50]) + tcp_hello(0x0100, 0, 1000))
seed("tcp_handshake_fuzz", "acceptor_refused", bytes([0x00]) + tcp_hello(0x8000 | 16, 2000, 1000))
seed("tcp_handshake_fuzz", "initiator_keyed", bytes([0x01 | 0x02 | 0x04]) + u16(0x0100 | 1) + u64(7) + u64(1000) + u64(5) +
     bytes(range(32)) + tcp_ack(0, 1000, 7) + bytes(range(64, 96)) + bytes(32))
seed("tcp_handshake_fuzz", "initiator_raw", bytes([0x01]) + u16(0x8000 | 1) + u64(7) + u64(1000) + u64(5) +
     bytes(range(32)) + tcp_ack(0, 1000, 7) + bytes(range(64, 96)) + bytes(range(32)))
seed("tcp_handshake_fuzz", "initiator_refused", bytes([0x01]) + u16(0) + u64(7) + u64(1000) + u64(0) +
     bytes(32) + tcp_ack(10, 1000, 7))

# ---- shm handshake: a mode byte (see shm_handshake_fuzz.c), [opener: the creator's header and
# a control byte], then steps of a control byte and a header image of TC_SHM_HDR_SIZE (2304) bytes ----
def shm_hdr(magic=0x314d485354435431, version=2, cell=64, ncells=4, seg=1536, ids=(7, 1000), pids=(0, 0),
            nonces=(bytes(range(32)), bytes(range(32, 64))), state=(0, 0), proved=(0, 0), verdict=(0, 0), pidns=0):
    line0 = struct.pack("<QIIIIQQQiiQ", magic, version, cell, ncells, 0, seg, ids[0], ids[1], pids[0], pids[1], pidns)
    line2 = struct.pack("<8I", state[0], state[1], 0, 0, proved[0], proved[1], verdict[0], verdict[1]) + bytes(32)
    return line0 + nonces[0] + nonces[1] + line2 + bytes(64) + bytes(2304 - 256)  # MACs, then withdrawals


assert len(shm_hdr()) == 2304
seed("shm_handshake_fuzz", "creator_up", bytes([0x02]) + bytes([0x02 | 0x08]) + shm_hdr(state=(1, 1), proved=(0, 1)))
seed("shm_handshake_fuzz", "creator_steps", bytes([0x00]) + bytes([0x00]) + shm_hdr() + bytes([0x08]) + shm_hdr(state=(1, 1)) +
     bytes([0x02 | 0x08]) + shm_hdr())
seed("shm_handshake_fuzz", "creator_near_miss", bytes([0x02]) + bytes([0x02 | 0x04 | 0x08 | 0x28]) + shm_hdr())
seed("shm_handshake_fuzz", "creator_whole", bytes([0x00]) + bytes([0x01 | 0x02]) + shm_hdr(seg=1 << 40, cell=1 << 20, state=(1, 1),
                                                                                            proved=(1, 1)))
seed("shm_handshake_fuzz", "opener_up", bytes([0x01 | 0x02]) + shm_hdr() + bytes([0x07]) + bytes([0x00]) + shm_hdr() +
     bytes([0x02 | 0x08]) + shm_hdr(state=(1, 1)))
seed("shm_handshake_fuzz", "opener_refused", bytes([0x01]) + shm_hdr() + bytes([0x07]) + bytes([0x08]) + shm_hdr(verdict=(2, 0)) +
     bytes([0x02 | 0x04 | 0x08]) + shm_hdr())
seed("shm_handshake_fuzz", "opener_big_segment", bytes([0x01 | 0x04]) + shm_hdr(seg=4096, cell=128, ncells=8) + bytes([0x03]) +
     bytes([0x0a]) + shm_hdr())
seed("shm_handshake_fuzz", "opener_bad_geometry", bytes([0x01 | 0x08]) + shm_hdr(seg=1024) + bytes([0x03]))
# the pair's file as the second side reads it (bit 7): size, links, owner, mode, our uid
for name, size, links, uid, mode in (("file_nofit", 1, 1, 1000, 0o100600), ("file_failed", 2, 1, 1000, 0o100600),
                                     ("file_pending", 0, 1, 1000, 0o100600), ("file_gone", 0, 0, 1000, 0o100600),
                                     ("file_ready", 4096, 1, 1000, 0o100600), ("file_foreign", 1, 1, 0, 0o100644)):
    seed("shm_handshake_fuzz", name, bytes([0x80]) + u64(size) + u64(links) + u32(uid) + u32(mode) + u32(1000))
# a leftover as a new context's sweep reads it (bit 6): our pid namespace, which pids are alive, the header
NS = 4026531836
for name, alive, hdr in (("left_stale", 0, shm_hdr(version=8, pids=(4242, 4243), pidns=NS)),
                         ("left_opener_alive", 2, shm_hdr(version=8, pids=(4242, 4243), pidns=NS)),
                         ("left_other_ns", 0, shm_hdr(version=8, pids=(4242, 4243), pidns=NS + 1)),
                         ("left_no_pid", 0, shm_hdr(version=8, pids=(4242, 0), pidns=NS)),
                         ("left_short", 0, shm_hdr(version=8, pids=(4242, 4243), pidns=NS)[:100])):
    seed("shm_handshake_fuzz", name, bytes([0x40]) + u64(NS) + bytes([alive]) + hdr)
seed("shm_handshake_fuzz", "opener_no_magic", bytes([0x01]) + shm_hdr(magic=0) + bytes([0x00]))

# ---- shm: set-up (8 bytes, see shm_ring_fuzz.c), then cells: 64-byte header + payload ----
T_EAGER, T_FIRST, T_MORE, T_RTS, T_ACK, T_PUT, T_SIGNAL, T_GET_REQ, T_GET_DATA = range(1, 10)


def cell(type_, payload=b"", flags=0, tag=0, total=0, off=0, cookie=0, addr=0, aux=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IIQQQQQQQ", type_, flags, n, tag, total, off, cookie, addr, aux) + payload


setup = bytes([0x03 | 0x40, 10, 0, 4, 0, 0, 0, 3])  # 3 receives, 4 cells per round, take the rest after
seed("shm_ring_fuzz", "eager", setup + cell(T_EAGER, b"hello", tag=0) + cell(T_EAGER, b"", tag=1) +
     cell(T_EAGER, bytes(range(200)), tag=2) + cell(T_EAGER, b"x", tag=3) + cell(T_EAGER, b"again", tag=0))
big = bytes((i * 13) & 0xff for i in range(600))
seed("shm_ring_fuzz", "pipelined", bytes([0x01, 100, 0, 0, 0, 0, 0, 0]) + cell(T_FIRST, big[:256], tag=0, total=600) +
     cell(T_MORE, big[256:512], off=256) + cell(T_MORE, big[512:], off=512))
seed("shm_ring_fuzz", "pipelined_unexpected", bytes([0x40, 0, 0, 0, 0, 0, 0, 15]) +
     cell(T_FIRST, big[:256], tag=2, total=300) + cell(T_MORE, big[256:300], off=256))
seed("shm_ring_fuzz", "rendezvous", bytes([0x08 | 0x01, 200, 0, 0, 0, 0, 0, 0]) +
     cell(T_RTS, tag=0, total=1000, addr=0x1000, cookie=3))
# withdrawn by the peer: one matched on arrival (read, then found withdrawn), one unexpected (swept)
seed("shm_ring_fuzz", "withdrawn", bytes([0x08 | 0x01 | 0x40, 200, 0, 0, 0, 0, 0, 0x10 | 1]) +
     cell(T_RTS, tag=0, total=1000, addr=0x1000, cookie=3) + cell(T_RTS, tag=1, total=900, addr=0x2000, cookie=4))
seed("shm_ring_fuzz", "target", bytes(8) + cell(T_PUT, bytes(range(32)), aux=1, off=64, cookie=4, flags=1) +
     cell(T_SIGNAL, aux=1, off=8, addr=5, cookie=5, flags=0) + cell(T_SIGNAL, aux=1, off=16, addr=7, cookie=6, flags=1) +
     cell(T_GET_REQ, aux=1, off=0, total=700, cookie=7))
seed("shm_ring_fuzz", "answers", bytes([0x10 | 0x20, 0, 0, 0, 0, 0, 0, 0]) +
     cell(T_GET_DATA, bytes(256), cookie=1, off=0) + cell(T_GET_DATA, bytes(44), cookie=1, off=256, flags=1) +
     cell(T_ACK, cookie=2))
seed("shm_ring_fuzz", "tail_beyond", bytes([0, 0, 0, 0, 0, 0, 3, 0x80]) + cell(T_EAGER, b"one", tag=9))
seed("shm_blob_fuzz", "address", u32(0x4d534354) + u16(2) + u16(0) + struct.pack("<i", 1) + u32(0) +
     u64(9) + u64(0x1234) + u64(0x7f0000001000) + u64(0))
seed("shm_blob_fuzz", "rkey", u32(0x4b4d5354) + struct.pack("<i", 1) + u64(0x1234) + u64(1) + u64(0x7f0000002000) + u64(4096))

# ---- ib: records of u32 immediate (host order), u16 bytes written, the bytes ----
def imm(kind, credits, low): return kind << 30 | credits << 22 | (low & 0x3fffff)
def ib_rec(word, body=b""): return u32(word) + u16(len(body)) + body
def ib_hdr(type_, tag, length, addr=0, rkey=0, cookie=0):
    return bytes([type_]) + bytes(7) + u64(tag) + u64(length) + u64(addr) + u32(rkey) + u32(0) + u64(cookie)


eager = ib_hdr(1, 5, 5) + b"hello"
seed("ib_imm_fuzz", "stream", ib_rec(imm(1, 3, 0)) + ib_rec(imm(0, 0, 0 << 14 | len(eager)), eager) +
     ib_rec(imm(2, 1, 77)) + ib_rec(imm(0, 0, 2 << 14 | 48), ib_hdr(2, 6, 100000, 0x10000, 0x55, 9)))
seed("ib_imm_fuzz", "bad_slot", ib_rec(imm(0, 0, 5 << 14 | 48), ib_hdr(1, 0, 0)))
seed("ib_blob_fuzz", "address", bytes([1, 1]) + u16(3) + bytes(16) + bytes([127, 0, 0, 1]) + struct.pack(">H", 40000) + bytes(6))
seed("ib_blob_fuzz", "rkey", u32(0x4b494354) + u32(1) + u64(7) + u64(0x7f0000001000) + u64(4096) + u32(0x1234) + u32(0))

# ---- ib handshake: a mode byte (see ib_handshake_fuzz.c), then hello and proof, or hello and
# challenge ----
def ib_hello(sender, receiver, flags, nrecv=64, slot=8192 + 48, result=0, nonce=bytes(range(32))):
    return (u32(0x42494354) + u16(3) + u16(result) + u64(sender) + u64(receiver) + u32(0x11) + u32(0x22) + u16(1) +
            bytes(6) + bytes(range(16)) + u16(flags) + bytes(6) + u64(0x7f0000001000) + u32(0x33) + u16(nrecv) +
            u16(slot) + nonce)


def ib_chal(sender, receiver): return u32(0x42494354) + u16(3) + u16(0) + u64(sender) + u64(receiver) + bytes(range(50, 82)) + bytes(32)


seed("ib_handshake_fuzz", "passive_keyed", bytes([0x02 | 0x04]) + ib_hello(7, 1000, 0x0100) + bytes(32))
seed("ib_handshake_fuzz", "passive_raw", bytes([0x00]) + ib_hello(7, 1000, 0) + bytes(range(32)))
seed("ib_handshake_fuzz", "passive_near_miss", bytes([0x04 | 0x08 | 0x30]) + ib_hello(999, 1000, 0) + bytes(32))
seed("ib_handshake_fuzz", "passive_geometry", bytes([0x02]) + ib_hello(7, 1000, 0x0100, nrecv=63) + bytes(32))
seed("ib_handshake_fuzz", "active_keyed", bytes([0x01 | 0x02 | 0x04]) + ib_hello(7, 1000, 0x0100) + ib_chal(1000, 7))
seed("ib_handshake_fuzz", "active_raw", bytes([0x01]) + ib_hello(7, 1000, 0) + ib_chal(1000, 7))

# ---- agreement: n - 1, rank, flags, then per round and neighbour a control byte + message ----
def agree_body(ranks, nid):
    """Control 1 or 2's input: id, count, then each rank as a gap above the last."""
    out, last = u32(nid) + u8(len(ranks)), None
    for r in ranks:
        out += u8(r if last is None else r - last - 1)
        last = r
    return out


n = 4
# rank 1 of 4 (all-to-all), rank 3 failed: two rounds of equal SETs from ranks 0 and 2, then DECIDEs
rounds = b""
for _ in range(2):
    rounds += u8(1) + agree_body([3], 100) + u8(1) + agree_body([3], 100)
rounds += u8(2) + agree_body([3], 100) + u8(2) + agree_body([3], 100)
seed("agree_fuzz", "decide", bytes([n - 1, 1, 0x08]) + rounds)
seed("agree_fuzz", "adopt", bytes([n - 1, 0, 0]) + u8(2) + agree_body([2], 120) + u8(3) + u8(1) + agree_body([2], 120))
raw = u32(0x53455432) + u32(1) + u32(100) + u32(3) + u32(0) + u32(0x53455432 ^ 0x454E4421)
seed("agree_fuzz", "raw_set", bytes([2, 0, 0]) + u8(0) + raw + u8(0) + raw)
# rank 5 of 20 on the sparse graph (10 neighbours): quiet rounds until it decides
seed("agree_fuzz", "sparse_quiet", bytes([19, 5, 0x01]) + (u8(1) + agree_body([], 100)) * 10 * 12)

# ---- TC_CHECK descriptions: n - 1, then 32 bytes per rank ----
def desc(coll, dtype, op, root, count, vhash=0): return struct.pack("<iiiiQQ", coll, dtype, op, root, count, vhash)


# ---- the small-message path's vote (small.h): u64 free, u64 need, u8 ok, 7 bytes of padding
def vote(free, need, ok): return u64(free) + u64(need) + bytes([ok]) + bytes(7)


# shm_lane_fuzz: records of 6 bytes. Peer write: [0x00 | len>>16 | 4 if withdrawn, slot,
# gen << 3 | tag, len lo, len hi, fill]; find: [0x80, tag, 0...]; move out: [0xc0, ...]. Big
# slots are 44-47.
def lane_w(slot, gen, tag, length, fill=0x5a, withdrawn=False):
    return bytes([(length >> 16) & 3 | (4 if withdrawn else 0), slot, gen << 3 | tag,
                  length & 0xff, (length >> 8) & 0xff, fill])
def lane_find(tag): return bytes([0x80, tag, 0, 0, 0, 0])
def lane_spill(): return bytes([0xc0, 0, 0, 0, 0, 0])
seed("shm_lane_fuzz", "full_big_then_move",
     b"".join(lane_w(44 + i, 1, i, 800) for i in range(4)) + lane_spill() +
     b"".join(lane_w(44 + i, 2, 4 + i, 8192) for i in range(4)) + b"".join(lane_find(t) for t in range(8)))
seed("shm_lane_fuzz", "tiny_small_withdrawn",
     lane_w(0, 1, 1, 3) + lane_w(32, 1, 2, 552) + lane_w(33, 1, 3, 0, withdrawn=True) + lane_spill() +
     lane_find(3) + lane_find(1))
seed("shm_lane_fuzz", "oversized_stays",
     lane_w(0, 1, 5, 105) + lane_w(40, 1, 6, 553) + lane_w(47, 1, 7, 8193) + lane_spill() +
     lane_find(5) + lane_find(6) + lane_find(7))
seed("small_vote_fuzz", "go", bytes([3]) + vote(1 << 20, 2 * 67584, 1) * 4)
seed("small_vote_fuzz", "no_room", bytes([3]) + vote(1 << 20, 64 << 20, 1) * 4)
seed("small_vote_fuzz", "one_no", bytes([2]) + vote(1 << 30, 0, 1) + vote(0, 0, 0) + vote(1 << 30, 0, 1))
seed("small_vote_fuzz", "hostile", bytes([2]) + vote(1, (1 << 64) - 1, 1) + vote(2, (1 << 64) - 1, 2) + vote(0, 5, 1))
seed("check_fuzz", "equal", bytes([2]) + desc(0, 7, 0, -1, 1000) * 3)
seed("check_fuzz", "mismatch", bytes([4]) + desc(0, 7, 0, -1, 1000) * 2 + desc(2, 7, -1, 0, 999) + desc(0, 7, 0, -1, 1000) +
     desc(0x7fffffff, -2147483648, 12345, -7, 2**64 - 1, 1))

# ---- configuration strings: a selector byte, then the text ----
for i, text in enumerate([b"42", b"-5", b"1k", b"16MiB", b"true", b"off", b"0.25", b"1e3", b"ring", b"AUTO",
                          b"0x10", b"", b"a=1, b = x ,c=3", b"algo=ring,tcp_nsocks=4,tcp_stripe_min=64k"]):
    seed("config_fuzz", "text%02d" % i, bytes([i & 3]) + text)

# ---- tuning files (TC_TUNING_FILE) ----
for name, text in [("full", b"# tc-tune\ntcomms_tuning = 1\nhost = node0\ndate = 2026-12-02T07:30:00Z\n"
                            b"tool = tc-tune\nranks = 4\nnodes = 2\nranks_per_node = 2\n"
                            b"alpha_intra_us = 0.75\nalpha_inter_us = 12\nbeta_intra_us = 1.25e-4\n"
                            b"beta_inter_us = 8e-3\ngamma_us = 2.5e-4\n"),
                   ("header", b"tcomms_tuning=1"), ("crlf", b"tcomms_tuning = 1\r\n\tgamma_us\t=\t1e-4 \r\n"),
                   ("bad_key", b"tcomms_tuning = 1\nalpha = 1\n"), ("range", b"tcomms_tuning = 1\ngamma_us = 2e9\n"),
                   ("version", b"tcomms_tuning = 2\n"), ("dup", b"tcomms_tuning = 1\nnodes = 1\nnodes = 2\n"),
                   ("overhead", b"tcomms_tuning = 2\nalpha_inter_us = 9.5\noverhead_us = 0.75\n"),
                   ("version3", b"tcomms_tuning = 3\n"),
                   ("rules", b"tcomms_tuning = 3\nranks = 6\nnodes = 3\nranks_per_node = 2\n"
                             b"rule_all_reduce = 0:recursive_doubling 11586:hierarchical 741456:rabenseifner\n"
                             b"rule_reduce = 0:binomial_tree 1449:linear\nrule_barrier = 0:linear\n"),
                   ("rules_bad", b"tcomms_tuning = 3\nranks = 2\nnodes = 1\nranks_per_node = 2\n"
                                 b"rule_gather = 0:linear 0:binomial_tree\n")]:
    seed("tuning_fuzz", name, text)

# ---- store frame headers ----
seed("store_frame_fuzz", "headers", b"".join(u32(length) + bytes([t, 0]) + u16(0) for t, length in
                                             [(1, 20), (2, 40), (3, 20), (4, 30), (5, 0), (6, 12), (16, 16), (17, 16)]))
seed("store_frame_fuzz", "limits", u32((4 << 20) + 64) + bytes([2, 0, 0, 0]) + u32((4 << 20) + 65) + bytes([2, 0, 0, 0]))

# ---- store bodies: world - 1, sender, then a body (PUT, FENCE, GET, NOTIFY, REPLY, EVENT) ----
def bs_key(k): return u16(len(k)) + k


for name, body in [("put", bs_key(b"addr") + u32(5) + b"hello"), ("put_empty", bs_key(b"k") + u32(0)),
                   ("fence", u64(3) + u64(1) + u32(0xffffffff)), ("get", u64(4) + u32(1) + bs_key(b"addr")),
                   ("notify_revoke", u32(2) + u32(1) + u32(7)), ("notify_failed", u32(1) + u32(2) + u32(0)),
                   ("reply_ok", u64(4) + u32(0) + u32(5) + b"value"),
                   ("reply_text", u64(3) + struct.pack("<i", -61) + u32(9) + b"not found"),
                   ("event", u32(1) + u32(2) + u32(0) + u32(3))]:
    seed("store_body_fuzz", name, bytes([3, 1]) + body)

# ---- window segments' names in /dev/shm: u64 the pid namespace, then the name ----
seed("win_seg_fuzz", "made", u64(4026531836) + b"tcw.4026531836.4242.7.3")
seed("win_seg_fuzz", "other_ns", u64(4026531836) + b"tcw.4026531837.4242.7.3")
seed("win_seg_fuzz", "pid_too_large", u64(5) + b"tcw.5.2147483648.1.1")
seed("win_seg_fuzz", "overflow", u64(5) + b"tcw.5.12.99999999999999999999.1")
seed("win_seg_fuzz", "signs_spaces", u64(5) + b"tcw.5.+12. 1.1")
seed("win_seg_fuzz", "pair_segment", u64(5) + b"tcomms-13-1e95f787fa7a2dc8-59fd56e11a2e5916")

# ---- heartbeat verdicts: ranks - 1, judging rank, accuser, knowledge bits, the message ----
def verdict(rank, pid, silent, host, magic=0x74637664):
    return u32(magic) + struct.pack("<iii", rank, pid, silent) + host.ljust(64, b"\0")[:64]


seed("verdict_fuzz", "silent", bytes([7, 0, 1, 0]) + verdict(3, 1234, 1, b"tcn1"))
seed("verdict_fuzz", "seen_dead_known", bytes([7, 2, 1, 1]) + verdict(5, -1, 0, b"tcn2"))
seed("verdict_fuzz", "about_self", bytes([3, 2, 0, 4]) + verdict(2, 9, 1, b"h"))
seed("verdict_fuzz", "unterminated", bytes([7, 0, 1, 0]) + verdict(3, 1, 1, b"x" * 64))
seed("verdict_fuzz", "short", bytes([7, 0, 1, 0]) + verdict(3, 1, 1, b"h")[:40])

# ---- store join: a mode byte (see store_auth_fuzz.c), then records ----
def bs_frame(t, body): return u32(len(body)) + bytes([t, 0, 0, 0]) + body


def st_raw(conn, data): return bytes([conn, len(data)]) + data
def st_hello(conn, rank, world, keyed): return bytes([conn | 2 | (8 if keyed else 0), rank, world])
def st_proof(conn, flip=None): return bytes([conn | 4 | (8 | flip << 4 if flip is not None else 0)])


requests = (st_raw(0, bs_frame(2, bs_key(b"addr") + u32(3) + b"abc")) + st_raw(0, bs_frame(3, u64(1) + u64(1) + u32(0xffffffff))) +
            st_raw(0, bs_frame(4, u64(2) + u32(1) + bs_key(b"addr"))) + st_raw(0, bs_frame(4, u64(3) + u32(2) + bs_key(b"none"))))
seed("store_auth_fuzz", "store_join", bytes([0]) + st_hello(0, 1, 3, False) + st_proof(0) + requests + st_raw(0, bs_frame(5, b"")))
seed("store_auth_fuzz", "store_join_keyed", bytes([2]) + st_hello(0, 0, 3, True) + st_proof(0) + requests)
seed("store_auth_fuzz", "store_two", bytes([0]) + st_hello(0, 1, 3, False) + st_proof(0) + st_hello(1, 2, 3, False) + st_proof(1) +
     st_raw(0, bs_frame(6, u32(2) + u32(1) + u32(9))) + st_raw(1, bs_frame(6, u32(1) + u32(0) + u32(0))) +
     st_raw(1, bs_frame(3, u64(1) + u64(1) + u32(10))) + bytes([6]))
seed("store_auth_fuzz", "store_forged", bytes([2]) + st_hello(0, 1, 3, False) + st_proof(0, 5) + st_hello(1, 1, 3, True) +
     st_raw(1, bs_frame(7, bytes(32))) + st_raw(0, bs_frame(2, bs_key(b"k") + u32(0))))
seed("store_auth_fuzz", "store_bad_claims", bytes([0]) + st_hello(0, 7, 3, False) + st_proof(0) + st_hello(1, 1, 4, False) + st_proof(1))
seed("store_auth_fuzz", "store_raw_hello", bytes([0]) + st_raw(1, bs_frame(1, u32(0x53424354) + u16(3) + u32(0) + u32(3) + bytes([0]) +
                                                                     bytes(32))) + st_proof(1) + st_raw(1, bs_frame(7, bytes(32))))


def cl_challenge(keyed, na=bytes(range(32)), flip=None): return bytes([1 | (4 if keyed else 0) | (8 | flip << 4 if flip is not None else 0)]) + na
def cl_reply(req, status_index, text=b""): return bytes([2, req, status_index, len(text)]) + text
def cl_event(kind, rank, comm, frm): return bytes([3, kind, rank, comm, frm])


after = cl_event(2, 1, 5, 1) + cl_reply(1, 0) + cl_reply(2, 0, b"value") + cl_event(1, 0, 0, 2)
seed("store_auth_fuzz", "client_join", bytes([1, 3, 1]) + cl_challenge(False) + cl_reply(0, 0) + after)
seed("store_auth_fuzz", "client_join_keyed", bytes([3, 3, 2]) + cl_challenge(True) + cl_event(1, 0, 0, 1) + cl_reply(0, 0) + after)
seed("store_auth_fuzz", "client_refused", bytes([3, 3, 1]) + cl_challenge(True) + cl_reply(0, 1, b"rank 1 is already connected"))
seed("store_auth_fuzz", "client_fake_store", bytes([3, 3, 1]) + cl_challenge(True, flip=3) + cl_reply(0, 0))
seed("store_auth_fuzz", "client_wrong_keyed", bytes([1, 3, 1]) + cl_challenge(True) + cl_reply(0, 0))
seed("store_auth_fuzz", "client_old_store", bytes([1, 3, 1]) + cl_reply(0, 1, b"protocol version 3, the store speaks 4"))

for target, items in seeds.items():
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    for name, data in items:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
