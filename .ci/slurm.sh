#!/usr/bin/env bash
# A single-node Slurm for tests: munged, slurmctld and slurmd started in
# the foreground as background jobs of this script, with their own key,
# socket, configuration and state in a temporary directory, and stopped by
# PID (and the directory removed) when the script exits.
#
#   .ci/slurm.sh COMMAND [ARGS...]
#
# runs COMMAND with SLURM_CONF pointing at the cluster, so that srun,
# sbatch and sinfo in it reach this Slurm. Needs root and Debian's
# slurm-wlm and munge. The node declares this host's CPUs; jobs with more
# tasks than CPUs need --overcommit.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi
for tool in munged mungekey slurmctld slurmd sinfo; do
	command -v "$tool" >/dev/null || { echo "slurm.sh: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/pcor-slurm.XXXXXX")
pids=()
stop() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

# free_port N: a TCP port from N up that nothing listens on.
free_port() {
	local p=$1
	while ss -Htln "sport = :$p" | grep -q .; do p=$((p + 1)); done
	echo "$p"
}

host=$(hostname -s)
cpus=$(nproc)
ctlport=$(free_port 16817)
dport=$(free_port $((ctlport + 1)))
mkdir -p "$dir/state" "$dir/spool"

mungekey --create --keyfile="$dir/munge.key" >/dev/null 2>&1 ||
	dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge.key"

cat >"$dir/slurm.conf" <<EOF
ClusterName=pcortest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctlport
SlurmdPort=$dport
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$dir/slurm.conf"

munged --foreground --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
	--pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>"$dir/munged.out" &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/munge.socket" ] && break; sleep 0.1; done

slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
pids+=($!)

ready=
for _ in $(seq 300); do
	if [ "$(sinfo -h -n "$host" -o %t 2>/dev/null)" = idle ]; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ -z "$ready" ]; then
	echo "slurm.sh: the node did not come up within 30 s" >&2
	for f in "$dir"/*.log "$dir"/*.out; do echo "== $f" >&2; tail -20 "$f" >&2; done
	exit 1
fi

set +e
"$@"
status=$?
set -e
if [ $status -ne 0 ]; then
	for f in "$dir"/slurmctld.log "$dir"/slurmd.log; do echo "== $f (tail)" >&2; tail -20 "$f" >&2; done
fi
exit $status
