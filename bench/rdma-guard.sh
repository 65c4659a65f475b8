# rdma-guard.sh - sourced by the guest scripts of rdma-vm.sh and rdma-ab.sh
# (busybox ash): `bounded SECS CMD [ARGS...]` runs CMD with a time bound.
# A command still running after SECS seconds is a hang, reported as one:
# the line "!!! timed out after SECS s: CMD", the kernel stacks of the
# command and its children (/proc/PID/task/*/stack), the kernel's own view
# of stuck tasks and CPUs (sysrq w and l, then the kernel log's tail),
# then SIGQUIT to the command and its children (a Go program prints every
# goroutine's stack on it, to its stderr) and, 10 s later, SIGKILL.
# bounded returns the command's status (124 when it timed out).

# guard_children PID: the PIDs whose parent is PID.
guard_children() {
	for s in /proc/[0-9]*/status; do
		if grep -q "^PPid:[[:space:]]*$1\$" "$s" 2>/dev/null; then
			s=${s#/proc/}
			echo "${s%/status}"
		fi
	done
}

# guard_tree PID: PID and its descendants.
guard_tree() {
	echo "$1"
	for c in $(guard_children "$1"); do guard_tree "$c"; done
}

guard_dump() {
	echo "### guard: processes"
	ps -o pid,ppid,stat,time,args 2>/dev/null || ps
	for p in $(guard_tree "$1"); do
		for t in /proc/$p/task/*; do
			echo "### guard: kernel stack of $p task ${t##*/} ($(cat "$t/comm" 2>/dev/null), $(cut -d' ' -f3 "$t/stat" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null))"
			cat "$t/stack" 2>/dev/null
		done
	done
	echo "### guard: /proc/loadavg $(cat /proc/loadavg)"
	echo "### guard: rxe hw_counters"
	grep -H . /sys/class/infiniband/*/ports/1/hw_counters/* 2>/dev/null | sed 's|.*/hw_counters/||'
	# Only in the guest (run.sh sets RDMA_VM_DEV there).
	if [ -n "${RDMA_VM_DEV:-}" ]; then
		echo w >/proc/sysrq-trigger 2>/dev/null
		echo l >/proc/sysrq-trigger 2>/dev/null
		echo "### guard: kernel log (tail)"
		dmesg | tail -n 150
	fi
}

bounded() {
	guard_secs=$1
	shift
	guard_flag=/tmp/guard.timedout
	rm -f "$guard_flag"
	"$@" &
	guard_pid=$!
	(
		i=0
		while [ $i -lt "$guard_secs" ]; do
			sleep 1
			kill -0 "$guard_pid" 2>/dev/null || exit 0
			i=$((i + 1))
		done
		: >"$guard_flag"
		echo "!!! timed out after $guard_secs s: $*"
		guard_dump "$guard_pid"
		pids=$(guard_tree "$guard_pid")
		kill -QUIT $pids 2>/dev/null
		sleep 10
		kill -KILL $pids 2>/dev/null
	) &
	guard_wd=$!
	wait "$guard_pid"
	guard_rc=$?
	if [ -e "$guard_flag" ]; then
		# The watchdog sends SIGKILL to what SIGQUIT left.
		wait "$guard_wd" 2>/dev/null
		guard_rc=124
	else
		kill "$guard_wd" 2>/dev/null
		wait "$guard_wd" 2>/dev/null
	fi
	rm -f "$guard_flag"
	return $guard_rc
}

# guard_clock checks the guest's clock against the RTC, which qemu keeps
# in the host's time. Under a heavily loaded host the kernel can calibrate
# the TSC wrongly at boot (one boot's clock ran 5x the host's: 6,317 s of
# uptime in 1,205 s), and then every timeout in the guest is that much
# shorter in fact: the transport's ACK timeout, pcor's peer timeouts,
# bench's --timeout. The system time starts from the RTC at boot; a clock
# ahead of (or behind) it by more than a fifth of the uptime is switched
# to the HPET clocksource (emulated against the host's clock; slower to
# read), and the lines "### guest clock" say so.
guard_clock() {
	[ -n "${RDMA_VM_DEV:-}" ] || return 0 # only in the guest
	cs=/sys/devices/system/clocksource/clocksource0
	rtc=$(cat /sys/class/rtc/rtc0/since_epoch 2>/dev/null) || return 0
	now=$(date +%s)
	up=$(cut -d. -f1 /proc/uptime)
	d=$((now - rtc))
	echo "### guest clock: uptime ${up} s, system time ahead of the RTC by ${d} s, clocksource $(cat $cs/current_clocksource 2>/dev/null)"
	[ "${1:-}" = check ] && return 0
	a=${d#-}
	if [ $((a * 5)) -gt "$up" ] && grep -qw hpet $cs/available_clocksource 2>/dev/null; then
		echo hpet >$cs/current_clocksource && echo "### guest clock: off by ${d} s in ${up} s: switched to $(cat $cs/current_clocksource)"
		date -s "@$(cat /sys/class/rtc/rtc0/since_epoch)" >/dev/null 2>&1
	fi
}
