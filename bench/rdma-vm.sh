#!/bin/bash
# rdma-vm.sh - pcor over RDMA beside raw verbs and perftest, in one boot of
# the soft-RoCE (rxe) guest of ../shared/rdma-vm, and write the figures
# with their ratios to bench/RESULTS-rdma.md.
#
#   bench/rdma-vm.sh [-o FILE] [-n PERFTEST_ITERS] [-i ROUNDTRIP_ITERS] [-r REPS] [-w WARMUP] [-m MODES] [-u]
#
#   -o FILE  markdown to write (default bench/RESULTS-rdma.md; - for stdout only)
#   -n N     ib_send_lat / ib_write_bw iterations (default 1000)
#   -i N     bench roundtrip timed round trips per size, over all repetitions (default 500)
#   -r N     bench repetitions per point, interleaved (default 5)
#   -w N     bench untimed messages before each measurement (default 10)
#   -m MODES pcor dispatcher modes of the RDMA runs (default blocking,polling)
#   -u       skip the UDP runs of the same bench commands
#
# In the guest, in order: perftest-loopback.sh (ib_send_lat 2 B, ib_write_bw
# 64 KiB), ib_read_bw 64 KiB (the baseline of messages moved by rendezvous
# RDMA READ), `bench roundtrip --fabric rdma` (pcor beside a raw SEND/RECV
# ping-pong between the same two processes), `bench throughput --fabric rdma`
# (pcor beside a raw RDMA WRITE stream), then the same two commands over UDP.
# TCG timings are emulation timings: only ratios within the one run mean
# anything. Env: PCOR_RDMA_VM (the VM runner, default
# ../shared/rdma-vm/run.sh beside the repository), RDMA_VM_TIMEOUT,
# RDMA_VM_CMD_TIMEOUT (bound on each bench command in the guest, default
# 600 s: one still running then is reported as a hang, see rdma-guard.sh),
# RDMA_VM_LOG (the guest's output, default /tmp/bench-rdma-vm.log; the
# guest's kernel console goes beside it, LOG.console).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM=$(dirname "${PCOR_RDMA_VM:-$ROOT/../shared/rdma-vm/run.sh}")
OUT=$ROOT/bench/RESULTS-rdma.md
PT_ITERS=1000
RT_ITERS=500
REPS=5
WARMUP=10
MODES=blocking,polling
UDP=1
CMD_TIMEOUT=${RDMA_VM_CMD_TIMEOUT:-600}
while getopts "o:n:i:r:w:m:uh" opt; do
	case $opt in
	o) OUT=$OPTARG ;;
	n) PT_ITERS=$OPTARG ;;
	i) RT_ITERS=$OPTARG ;;
	r) REPS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	m) MODES=$OPTARG ;;
	u) UDP=0 ;;
	*) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; [ "$opt" = h ]; exit ;;
	esac
done

RT_SIZES=2,1K,64K
TP_SIZES=64K,1M
work=$(mktemp -d /tmp/bench-rdma-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT

(cd "$ROOT" && CGO_ENABLED=0 go build -o "$work/bench" ./bench)
cp "$VM/examples/perftest-loopback.sh" "$work/"

# bench writes its tables to stdout; stderr goes to a file (no progress line
# on the serial console) and is shown only when the command fails.
# Each runs under a time bound (rdma-guard.sh): a hang is reported with
# the kernel's and the Go runtime's stacks, and the boot goes on.
b() { echo "### bench $*"; echo "\$ ./bench $*"; bounded $CMD_TIMEOUT ./bench "$@" $BENCH_OPTS 2>/tmp/bench.err || { echo "!!! bench $* failed:"; tail -n 800 /tmp/bench.err; }; }
guest="cd /payload
. ./rdma-guard.sh
guard_clock
CMD_TIMEOUT=$CMD_TIMEOUT
BENCH_OPTS='--reps $REPS --warmup $WARMUP'
$(declare -f b)
echo \"### host load: $(cut -d' ' -f1-3 /proc/loadavg)\"
sh ./perftest-loopback.sh -n $PT_ITERS
echo '=================== ib_read_bw'
(timeout 120 ib_read_bw -d \${RDMA_VM_DEV:-rxe0} -F -n $PT_ITERS >/tmp/rd.server.log 2>&1 &) ; sleep 1
timeout 120 ib_read_bw -d \${RDMA_VM_DEV:-rxe0} -F -n $PT_ITERS \${RDMA_VM_IP:-127.0.0.1} || echo '!!! ib_read_bw failed'
echo '--- server side (ib_read_bw)'
b roundtrip --fabric rdma --mode $MODES --sizes $RT_SIZES --iters $RT_ITERS
b throughput --fabric rdma --mode $MODES --sizes $TP_SIZES"
if [ "$UDP" = 1 ]; then
	guest="$guest
b roundtrip --fabric udp --sizes $RT_SIZES --iters $RT_ITERS
b throughput --fabric udp --sizes $TP_SIZES"
fi

guest="$guest
guard_clock check"

log=${RDMA_VM_LOG:-/tmp/bench-rdma-vm.log}
status=0
start=$(date +%s)
RDMA_VM_KEEP_CONSOLE=$log.console "$VM/run.sh" -m 2G -t "${RDMA_VM_TIMEOUT:-900}" -f "$work/perftest-loopback.sh" -f "$work/bench" -f "$ROOT/bench/rdma-guard.sh" -- "$guest" | tee "$log" || status=$?
if [ "$status" != 0 ]; then
	echo "rdma-vm.sh: guest run failed (status $status)" >&2
	exit "$status"
fi
echo "rdma-vm.sh: guest run took $(($(date +%s) - start)) s" >&2
grep -q '^!!!' "$log" && { echo "rdma-vm.sh: a command failed in the guest (lines starting with !!! above)" >&2; exit 1; }

# summarize pulls the figures out of the guest log and writes the markdown.
summarize() {
	awk -v now="$(date -u '+%Y-%m-%d %H:%M UTC')" -v rtsizes="$RT_SIZES" -v tpsizes="$TP_SIZES" -v ptiters="$PT_ITERS" -v rtiters="$RT_ITERS" '
	function num(s) { return s + 0 }
	/^=================== ib_send_lat/ { sec = "lat"; next }
	/^=================== ib_write_bw/ { sec = "bw"; next }
	/^=================== ib_read_bw/ { sec = "rd"; next }
	/^--- server side/ { sec = "" }
	/^### host load:/ { load = $4 " " $5 " " $6 }
	# "# paired pcor/blocking/verbs at 2: median 1.43x, range [0.90, 2.10], 5 repetitions"
	/^# paired pcor\/[a-z]+\/verbs at / && tab != "" {
		split($3, nm, "/"); sz = $5; sub(":$", "", sz); m = $7; sub("x,$", "", m); lo = $9; gsub("[[,]", "", lo); hi = $10; gsub("[],]", "", hi)
		paired[tab, "pcor/" nm[2], sz] = m " [" lo "–" hi "]"
		npaired = $11
	}
	sec == "lat" && /^ *#bytes/ { getline; lat_size = $1; lat_typ = num($5); lat_avg = num($6); lat_p99 = num($8); next }
	sec == "bw" && /^ *#bytes/ { getline; bw_size = $1; bw_avg = num($4); next }
	sec == "rd" && /^ *#bytes/ { getline; rd_size = $1; rd_avg = num($4); next }
	/^### bench / { cmd = $3; fab = $5; tab = cmd "/" fab; order[++ntab] = tab; next }
	/^# pcor-go/ && tab != "" { text[tab] = $0 "\n"; inTab = 1; next }
	inTab && /^  # size/ {
		text[tab] = text[tab] $0 "\n"
		for (k = 3; k <= NF; k++) {
			col[tab, $k] = k - 1
			if ($(k + 1) == "±") sp[tab, $k] = k
		}
		next
	}
	inTab && /^ +[0-9]/ {
		text[tab] = text[tab] $0 "\n"
		rows[tab, $1] = $0
		next
	}
	inTab && /^#/ { text[tab] = text[tab] $0 "\n"; next }
	inTab { inTab = 0 }
	function field(tab, size, name,   f) {
		if (!((tab, name) in col) || !((tab, size) in rows)) return ""
		split(rows[tab, size], f, " ")
		return f[col[tab, name]]
	}
	function spread(tab, size, name,   f) {
		if (!((tab, name) in sp) || !((tab, size) in rows)) return ""
		split(rows[tab, size], f, " ")
		return f[sp[tab, name]]
	}
	function dash(x) { return x == "" ? "-" : x }
	function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
	# px is the median and range over the repetitions of the ratio of
	# each pcor repetition to the verbs repetition sampled next to it, or
	# else the ratio of the two medians (rx).
	function px(tab, size, name, a, b, sa, sb) {
		if ((tab, name, size) in paired) return paired[tab, name, size]
		return rx(a, b, sa, sb)
	}
	# rx is a ratio of two medians with the spreads of both over the repetitions.
	function rx(a, b, sa, sb,   r) {
		r = ratio(a, b)
		if (r == "-" || (sa == "" && sb == "")) return r
		return r " (±" dash(sa) " / ±" dash(sb) ")"
	}
	END {
		print "# pcor-go over RDMA (soft-RoCE VM)\n"
		print "Regenerate with `bench/rdma-vm.sh` (from the repository root). One boot of the QEMU/TCG guest of " \
		      "`../shared/rdma-vm` (Debian 6.1 kernel, rdma_rxe on virtio eth0, 2 vCPUs, 2 GiB) ran, in order: " \
		      "perftest `ib_send_lat`, `ib_write_bw` and `ib_read_bw` in loopback on rxe0, `bench roundtrip --fabric rdma`, " \
		      "`bench throughput --fabric rdma` and the same two over UDP."
		print ""
		print "In `bench --fabric rdma` between two processes the baseline is raw verbs between the same two processes " \
		      "on the same device (internal/verbs `BaselineEnd`, busy-polling like perftest): a SEND/RECV ping-pong for " \
		      "round trips, an RDMA WRITE stream (window 64 outstanding) for throughput, sampled in turn with pcor. " \
		      "TCG timings are emulation timings on a shared host (load average " load " when the guest started): " \
		      "only the ratios inside this one run mean anything.\n"
		print "Generated " now ".\n"
		print "## Ratios\n"
		print "Each figure of bench is the median of its repetitions, with its spread, (max-min)/median, over them in the tables below. Each ratio of pcor to verbs is paired: every repetition of pcor is divided by the repetition of verbs sampled just before it, and the ratio is the median of these " (npaired ? npaired : "") " ratios, followed by their range [min–max], so that noise can be told from change: a load that comes and goes on the host weighs on both figures of each pair.\n"
		print "Round trip (median, µs; perftest reports one-way time, so its figure is doubled; the verbs ping-pong was sampled in turn with pcor/blocking, pcor/polling ran after):\n"
		print "| size | perftest ib_send_lat ×2 (typical) | verbs | pcor/blocking | pcor/polling | verbs/perftest | blocking/verbs | polling/verbs |"
		print "|---|---|---|---|---|---|---|---|"
		n = split(rtsizes, rs, ",")
		for (i = 1; i <= n; i++) {
			s = rs[i]; t = "roundtrip/rdma"; v = field(t, s, "verbs"); p = field(t, s, "pcor/blocking"); q = field(t, s, "pcor/polling")
			pt = (s == lat_size "") ? sprintf("%.2f", 2 * lat_typ) : ""
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", s, dash(pt), v, p, dash(q), ratio(v, pt),
				px(t, s, "pcor/blocking", p, v, spread(t, s, "pcor/blocking"), spread(t, s, "verbs")), px(t, s, "pcor/polling", q, v, spread(t, s, "pcor/polling"), spread(t, s, "verbs"))
		}
		print "\nThroughput (median, MB/s = 10^6 B/s):\n"
		print "| size | perftest ib_write_bw (average) | ib_read_bw (average) | verbs WRITE | pcor/blocking | pcor/polling | verbs/perftest | blocking/verbs | polling/verbs | blocking/ib_read_bw |"
		print "|---|---|---|---|---|---|---|---|---|---|"
		n = split(tpsizes, ts, ",")
		for (i = 1; i <= n; i++) {
			s = ts[i]; t = "throughput/rdma"; v = field(t, s, "verbs"); p = field(t, s, "pcor/blocking"); q = field(t, s, "pcor/polling")
			pt = (s == "64K" && bw_size == 65536) ? sprintf("%.2f", bw_avg) : ""
			rd = (s == "64K" && rd_size == 65536) ? sprintf("%.2f", rd_avg) : ""
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, dash(pt), dash(rd), v, p, dash(q), ratio(v, pt),
				px(t, s, "pcor/blocking", p, v, spread(t, s, "pcor/blocking"), spread(t, s, "verbs")), px(t, s, "pcor/polling", q, v, spread(t, s, "pcor/polling"), spread(t, s, "verbs")), ratio(p, rd)
		}
		if (("roundtrip/udp", "udpconn") in col || ("throughput/udp", "udp") in col) {
			print "\nSame guest, UDP (pcor over fabric/udp against raw UDP on the guest loopback):\n"
			print "| command | size | raw udp (ping-pong on a connected socket; stream) | pcor/blocking | pcor/udp | pcor over RDMA ÷ pcor over UDP |"
			print "|---|---|---|---|---|---|"
			for (i = 1; i <= split(rtsizes, rs, ","); i++) {
				s = rs[i]; t = "roundtrip/udp"; b = "udpconn"; u = field(t, s, b); p = field(t, s, "pcor/blocking")
				printf "| roundtrip (µs) | %s | %s | %s | %s | %s |\n", s, u, p, rx(p, u, spread(t, s, "pcor/blocking"), spread(t, s, b)), ratio(field("roundtrip/rdma", s, "pcor/blocking"), p)
			}
			for (i = 1; i <= split(tpsizes, ts, ","); i++) {
				s = ts[i]; t = "throughput/udp"; u = field(t, s, "udp"); p = field(t, s, "pcor/blocking")
				printf "| throughput (MB/s) | %s | %s | %s | %s | %s |\n", s, u, p, rx(p, u, spread(t, s, "pcor/blocking"), spread(t, s, "udp")), ratio(field("throughput/rdma", s, "pcor/blocking"), p)
			}
		}
		print "\nperftest (" ptiters " iterations): ib_send_lat " lat_size " B one-way typical " lat_typ " µs, average " lat_avg \
		      " µs, p99 " lat_p99 " µs; ib_write_bw " bw_size " B average " bw_avg " MB/s (tx depth 128); ib_read_bw " rd_size " B average " rd_avg " MB/s.\n"
		print "## Tables\n"
		for (i = 1; i <= ntab; i++) {
			print "### " order[i] "\n\n```\n" text[order[i]] "```\n"
		}
	}' "$log"
}

if [ "$OUT" = - ]; then
	summarize
else
	summarize >"$OUT"
	echo "rdma-vm.sh: wrote $OUT" >&2
fi
