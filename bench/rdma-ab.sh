#!/bin/bash
# rdma-ab.sh - compare bench binaries over RDMA in ONE boot of the soft-RoCE
# guest of ../shared/rdma-vm: each round runs every binary once, in a
# rotating order, so that the variants share the guest's and the host's
# moments. The summary gives, per variant, the median [min..max] over the
# rounds of each ratio to the raw verbs baseline measured in the same run,
# and of each series' counters per round trip or message, both processes
# (/cs context switches, /sys system calls (tracefs is mounted for them),
# /cpu CPU µs): counters tell variants apart where TCG's timings cannot.
# It also gives the guest's CPU time split over each command run, in per
# mille of both CPUs (cpu CMD user, sys, softirq, idle: /proc/stat; the
# command's setup counts too), and rxe's own counters' growth per command
# run (rxe CMD rnr:
# receiver-not-ready NAKs received; retry: transport retries; exceeded:
# retries run out, a queue pair failed; dup: duplicate requests).
#
#   bench/rdma-ab.sh [-r ROUNDS] [-c CMDS] [-o LOG] [-T] NAME=BENCH_BINARY ...
#
#   -r N     rounds (default 3)
#   -c CMDS  ;-separated bench arguments run per binary per round (default:
#            the 2 B round trip and the 64 KiB and 1 MiB streams, both modes)
#   -o LOG   the guest's output (default /tmp/rdma-ab.log)
#   -s       boot nothing: summarize the LOG of an earlier run (-o)
#   -t SECS  bound on each bench command in the guest (default 600): one
#            still running then is reported as a hang ("!!! timed out",
#            with kernel and goroutine stacks, see rdma-guard.sh) and
#            killed, and the run goes on
#   -T       also count each system call and context switch of the whole
#            guest during each command (tracefs histograms): the summary
#            then gives, per variant, the median count per command run of
#            each system call (trace CMD sys_NAME) and of the switches away
#            from the bench processes, runnable (switch/preempted) or
#            sleeping (switch/slept). Runs with --baselines=false isolate
#            pcor's own.
#
# Build the binaries with CGO_ENABLED=0 go build -o DIR/bench-x ./bench
# (one per tree). The guest's kernel console is kept beside LOG
# (LOG.console): soft lockups and the sysrq dumps of a hang land there.
# Env: PCOR_RDMA_VM, RDMA_VM_TIMEOUT (default 1500).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM=${PCOR_RDMA_VM:-$ROOT/../shared/rdma-vm/run.sh}
ROUNDS=3
CMDS="roundtrip --fabric rdma --mode blocking,polling --sizes 2 --iters 300 --reps 3 --warmup 10;throughput --fabric rdma --mode blocking,polling --sizes 64K,1M --reps 3"
LOG=/tmp/rdma-ab.log
TRACE=0
SUMMARY=0
CMD_TIMEOUT=600
while getopts "r:c:o:t:Tsh" opt; do
	case $opt in
	r) ROUNDS=$OPTARG ;;
	c) CMDS=$OPTARG ;;
	o) LOG=$OPTARG ;;
	t) CMD_TIMEOUT=$OPTARG ;;
	T) TRACE=1 ;;
	s) SUMMARY=1 ;;
	*) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; [ "$opt" = h ]; exit ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "rdma-ab.sh: give NAME=BINARY pairs" >&2; exit 2; }

names=() files=(-f "$ROOT/bench/rdma-guard.sh")
for a in "$@"; do
	names+=("${a%%=*}")
	files+=(-f "${a#*=}")
done
base=()
for a in "$@"; do base+=("$(basename "${a#*=}")"); done

guest="cd /payload
. ./rdma-guard.sh
guard_clock
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
T=/sys/kernel/tracing
H1='hist:keys=id.syscall:vals=hitcount:sort=hitcount.descending:size=256'
H2='hist:keys=prev_comm,prev_state:vals=hitcount:sort=hitcount.descending'
trace() {
	if [ $TRACE = 1 ]; then
		echo \"\$1\$H1\" >\$T/events/raw_syscalls/sys_enter/trigger
		echo \"\$1\$H2\" >\$T/events/sched/sched_switch/trigger
	fi
}
# rxe's counters of the device (receiver-not-ready NAKs received, transport
# retries, retries exhausted, duplicate requests), before and after each command.
# The guest's CPU time during each command, from /proc/stat: per mille
# of all CPUs' time in user, system, softirq and idle (with iowait).
cpustat() { head -n 1 /proc/stat; }
rxe() {
	hw=/sys/class/infiniband/\${RDMA_VM_DEV:-rxe0}/ports/1/hw_counters
	for f in rcvd_rnr_err completer_retry_err retry_exceeded_err duplicate_request; do printf '%s ' \$(cat \$hw/\$f 2>/dev/null || echo 0); done
}
names='${names[*]}'
bins='${base[*]}'
n=${#names[@]}
IFS=';'; set -- \$(echo '$CMDS'); unset IFS
for r in \$(seq 1 $ROUNDS); do
	for k in \$(seq 0 \$((n - 1))); do
		i=\$(( (k + r - 1) % n + 1 ))
		name=\$(echo \$names | cut -d' ' -f\$i); bin=\$(echo \$bins | cut -d' ' -f\$i)
		for c in \"\$@\"; do
			echo \"### round \$r variant \$name: \$c\"
			trace ''
			hw0=\$(rxe)
			st0=\$(cpustat)
			t0=\$(cut -d' ' -f1 /proc/uptime)
			bounded $CMD_TIMEOUT ./\$bin \$c 2>/tmp/err
			rc=\$?
			echo \"### took \$t0 -> \$(cut -d' ' -f1 /proc/uptime) s (guest uptime), status \$rc\"
			if [ \$rc = 124 ]; then
				echo '### stderr (goroutines at SIGQUIT)'; tail -n 800 /tmp/err
			elif [ \$rc != 0 ]; then
				echo \"!!! failed (status \$rc)\"; tail -n 400 /tmp/err
			elif grep -q 'took its whole step' /tmp/err; then
				echo '### stalled samples'; tail -n 400 /tmp/err
			fi
			echo \"### rxe \$hw0 -> \$(rxe)\"
			echo \"### cpu \$st0 -> \$(cpustat)\"
			if [ $TRACE = 1 ]; then
				echo '### syscalls'; grep -E '^\\{ id:' \$T/events/raw_syscalls/sys_enter/hist
				echo '### switches'; grep -E '^\\{ prev_comm: bench' \$T/events/sched/sched_switch/hist
				trace '!'
			fi
		done
	done
done
guard_clock check
echo '### kernel log: warnings'
dmesg | grep -iE 'lockup|rcu_|hung|BUG|WARNING|rxe|Call Trace' | tail -n 60"

if [ "$SUMMARY" = 0 ]; then
	echo "rdma-ab.sh: host load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	start=$(date +%s)
	RDMA_VM_KEEP_CONSOLE=$LOG.console "$VM" -m 2G -t "${RDMA_VM_TIMEOUT:-1500}" "${files[@]}" -- "$guest" >"$LOG" || { echo "rdma-ab.sh: guest failed, see $LOG" >&2; exit 1; }
	echo "rdma-ab.sh: guest took $(($(date +%s) - start)) s; host load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
fi

# Each bench table row: size, then per series median and spread, then the
# ratios (ending in x). Print name, command, size and each ratio column.
awk '
/^### round/ {
	flushsw(); v = $5; sub(":", "", v); cmd = $6; vs[v] = 1
	for (k = 7; k < NF; k++) if ($k == "--mode" && $(k + 1) !~ /,/) cmd = cmd "/" $(k + 1)
	next
}
# -T: "{ id: sys_write [  1] } hitcount:  3564" and
# "{ prev_comm: bench-A   , prev_state:  1 } hitcount:  8841".
/^\{ id: sys_/ { key = "trace " cmd " " $3; vals[v, key] = vals[v, key] " " $NF; keys[key] = 1; next }
/^\{ prev_comm: bench/ {
	key = "trace " cmd " switch/" ($(NF - 3) == 0 ? "preempted" : $(NF - 3) == 1 ? "slept" : "other")
	seen[key] += $NF
	next
}
# "### rxe 1 2 0 0 -> 5 3 0 0": per command run, the growth of the rxe counters.
/^### rxe / {
	split("rnr retry exceeded dup", rxn, " ")
	for (k = 1; k <= 4; k++) { key = "rxe " cmd " " rxn[k]; vals[v, key] = vals[v, key] " " ($(k + 7) - $(k + 2)); keys[key] = 1 }
	next
}
# "### cpu cpu U N S I W Q SQ ... -> cpu U N S I W Q SQ ...": per mille of
# the guest CPU time in user (with nice), system, softirq (with irq),
# idle (with iowait) during the command.
/^### cpu / {
	for (k = 4; k <= NF && $k != "->"; k++) b[k - 3] = $k
	nb = k - 4; tot = 0
	for (j = 1; j <= nb; j++) { d[j] = $(k + 1 + j) - b[j]; tot += d[j] }
	if (tot > 0) {
		split("user sys softirq idle", cn, " ")
		cv[1] = d[1] + d[2]; cv[2] = d[3]; cv[3] = d[6] + d[7]; cv[4] = d[4] + d[5]
		for (j = 1; j <= 4; j++) { key = "cpu " cmd " " cn[j]; vals[v, key] = vals[v, key] " " int(1000 * cv[j] / tot + 0.5); keys[key] = 1 }
	}
	next
}
/^### switches/ { next }
/^### syscalls/ { next }
function flushsw(   k) { for (k in seen) { vals[v, k] = vals[v, k] " " seen[k]; keys[k] = 1 }; delete seen }
/^  # size/ { nh = 0; for (k = 3; k <= NF; k++) if ($k ~ /\//) h[++nh] = $k; next }
/^ +[0-9]/ && cmd != "" {
	j = 0
	for (k = 2; k <= NF; k++) if ($k ~ /x$/) { j++; key = cmd " " $1 " " h[j]; x = $k; sub("x$", "", x); vals[v, key] = vals[v, key] " " x; keys[key] = 1; vs[v] = 1 }
}
/per (round trip|message), both processes/ { meter = 1; next }
# The counters: "#  size  name..." then "#  SIZE  cpu / cs (vol) / syscalls ...".
meter == 1 && /^#  size/ { nm = 0; for (k = 3; k <= NF; k++) m[++nm] = $k; meter = 2; next }
meter == 2 && /^# +[0-9]+[KMG]? +[0-9.]+ \// {
	line = $0; sub("^# +", "", line); size = line; sub(" .*", "", size); sub("^[^ ]+ +", "", line)
	ns = split(line, parts, "  +")
	for (j = 1; j <= ns && j <= nm; j++) {
		split(parts[j], f, " ")
		key = cmd " " size " " m[j] "/cs"; vals[v, key] = vals[v, key] " " f[3]; keys[key] = 1
		key = cmd " " size " " m[j] "/sys"; vals[v, key] = vals[v, key] " " f[6]; keys[key] = 1
		key = cmd " " size " " m[j] "/cpu"; vals[v, key] = vals[v, key] " " f[1]; keys[key] = 1
	}
	next
}
meter == 2 { meter = 0 }
END {
	flushsw()
	for (key in keys) {
		printf "%-28s", key
		for (v in vs) {
			n = split(vals[v, key], a, " ")
			# sort
			for (p = 1; p <= n; p++) for (q = p + 1; q <= n; q++) if (a[q] + 0 < a[p] + 0) { t = a[p]; a[p] = a[q]; a[q] = t }
			med = n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : "-"
			printf "  %s: %s [%s..%s] (%d)", v, med, a[1], a[n], n
		}
		printf "\n"
	}
}' "$LOG" | sort
