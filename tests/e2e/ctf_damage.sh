#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctf_damage.sh - damaged LTTng (CTF) traces never abort or hang ctrace
# (issue 29). The killed program's golden trace, converted to CTF by
# babeltrace2's sink.ctf.fs through the plugin `ctrace` (no session daemon
# needed), its metadata then packetized as LTTng writes it (4 KiB packets,
# CTF 1.8 §7.1), must read as the text one does; then:
#   - a mapping's build-id length of 20 made 65556 (byte 446 of the stream):
#     babeltrace2 fails with its error left set behind a call that returned
#     OK (ctrace aborted on its next call): exit 3, its message said;
#   - the metadata cut at 882 bytes, inside its first packet (babeltrace2
#     spins forever): exit 1 at once, the file and the cut named;
#   - the last build-id length made 134 million (byte 11711): babeltrace2
#     allocates without end; the watchdog (CTRACE_CTF_TIMEOUT=1) stops it:
#     exit 1, said;
#   - 40 directories damaged at random (a fixed seed: bits flipped, bytes
#     overwritten, cut, repeated, in the stream or the metadata): none
#     ends by a signal (an abort) or by `timeout` (a hang).
# usage: ctf_damage.sh CTRACE PLUGIN_DIR GOLDEN_DIR
set -uo pipefail
ctrace=$1 plugins=$2 golden=$3
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/checks.sh"
source "$here/bt2plugin_run.sh"

# stats DIR: `ctrace stats` with a bound, so that a hang fails the test.
# With leaks=0, a sanitizer build reports no leak: babeltrace2 2.0's
# source.ctf.fs keeps the error of a batch it cut short for its next call
# (fs.c, next_saved_error) and never frees it when the reading stops there.
stats() {
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=${leaks:-1} \
        CTRACE_CTF_TIMEOUT=${bound:-10} timeout 20 "$ctrace" stats "$1"
}

# flip DIR OFFSET MASK: flips the bits MASK of the stream file's byte OFFSET.
flip() {
    python3 -c 'import sys; p, o, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(p, "rb").read()); b[o] ^= m; open(p, "wb").write(b)' "$1/killed.bin" "$2" "$3"
}

bt2 "$plugins" convert "$golden/killed.bin" --component=sink.ctf.fs \
    --params="path=\"$tmp/ctf\"" >"$tmp/convert.out" 2>&1 || cat "$tmp/convert.out"
good=$tmp/ctf/killed.bin
check "sink.ctf.fs wrote a CTF trace" test -f "$good/metadata"
stats "$good" >"$tmp/text.stats" 2>&1
python3 - "$good/metadata" <<'EOF'
import re, struct, sys, uuid
p = sys.argv[1]
text = open(p, "rb").read()
trace = uuid.UUID(re.search(rb'uuid = "([0-9a-f-]+)"', text).group(1).decode()).bytes
out, room = b"", 4096 - 37
for i in range(0, len(text), room):
    chunk = text[i:i + room]
    out += struct.pack("<I16sIIIBBBBB", 0x75D11D57, trace, 0, (37 + len(chunk)) * 8, 4096 * 8,
                       0, 0, 0, 1, 8) + chunk + bytes(room - len(chunk))
open(p, "wb").write(out)
EOF
check "packetized metadata: read as the text" diff "$tmp/text.stats" <(stats "$good" 2>&1)
check "packetized metadata: complete" grep -q complete "$tmp/text.stats"

cp -r "$good" "$tmp/error-left"
flip "$tmp/error-left" 446 1
leaks=0 expect "an error left behind an OK: exit 3, said" 3 \
    "trace damaged in the frame at file offset [0-9]+: babeltrace2: " -- stats "$tmp/error-left"

cp -r "$good" "$tmp/cut"
truncate -s 882 "$tmp/cut/metadata"
start=$(date +%s%N)
expect "metadata cut at 882 bytes: exit 1, the file and the cut named" 1 \
    "cut/metadata: metadata cut short at byte 882: its packet at byte 0 holds 4096 bytes" -- \
    stats "$tmp/cut"
ms=$((($(date +%s%N) - start) / 1000000))
check "metadata cut at 882 bytes: said at once (${ms} ms)" test "$ms" -lt 5000

cp -r "$good" "$tmp/endless"
flip "$tmp/endless" 11711 8
start=$(date +%s%N)
bound=1 expect "an endless allocation: the watchdog stops it, exit 1" 1 \
    "endless: babeltrace2 read nothing for 1 s .*CTRACE_CTF_TIMEOUT" -- stats "$tmp/endless"
ms=$((($(date +%s%N) - start) / 1000000))
check "an endless allocation: stopped within the bound (${ms} ms)" test "$ms" -lt 5000

# ---- the sweep
python3 - "$good" "$tmp/sweep" <<'EOF'
import os, random, shutil, sys
good, out = sys.argv[1], sys.argv[2]
rng = random.Random(29)
for i in range(40):
    d = os.path.join(out, "d%02d" % i)
    shutil.copytree(good, d)
    p = os.path.join(d, "metadata" if i % 3 == 0 else "killed.bin")
    b = bytearray(open(p, "rb").read())
    op, j = rng.randrange(4), rng.randrange(len(b))
    if op == 0:
        b = b[:j]
    elif op == 1:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == 2:
        b[j:j + 8] = rng.choice([b"\xff" * 8, b"\x00" * 8, rng.randbytes(8)])
    else:
        b[j:j] = b[j:j + rng.randint(1, 2000)]
    open(p, "wb").write(bytes(b))
EOF
start=$(date +%s%N)
ended=
for d in "$tmp"/sweep/d*; do
    leaks=0 bound=1 stats "$d" >/dev/null 2>"$d.err"
    status=$?
    [ "$status" -lt 124 ] || ended+=" ${d##*/}:$status"
done
ms=$((($(date +%s%N) - start) / 1000000))
check "40 damaged traces: none aborted or hung (${ms} ms)${ended:+; ended:$ended}" test -z "$ended"

finish
