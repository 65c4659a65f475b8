#!/usr/bin/env bash
# The ring example under real launchers, with no PCOR_* variable set:
# Open MPI's mpirun, and srun and sbatch on a single-node Slurm
# (.ci/slurm.sh). Each is run RUNS times (default 10); any failure fails.
# First, a small ring's start and orderly exit is looped LOOPS times
# (default 300) under pcorrun and with rank 0 serving the directory.
#
#   .ci/launchers.sh [RUNS [LOOPS]]
#
# As root on Debian it installs openmpi-bin, slurm-wlm and munge first
# (and iproute2, whose ss .ci/slurm.sh uses to find free ports).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
loops=${2:-300}
export PATH="/usr/local/go/bin:$PATH"

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null &&
	! { command -v mpirun && command -v srun && command -v munged && command -v ss; } >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin slurm-wlm munge iproute2 >/dev/null
fi

echo "start and exit, $loops times each way"
go test -count=1 -timeout 80m -run 'TestStartExitLoop' ./examples/ring -args -loops "$loops"

bin=$(mktemp -d "${TMPDIR:-/tmp}/pcor-launchers.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go build -o "$bin" ./examples/ring
cp examples/ring/ring.sbatch "$bin/"
for v in $(env | grep -o '^PCOR_[A-Z_]*' || true); do unset "$v"; done

# loop NAME COMMAND...: runs COMMAND $runs times in $bin, keeping the
# output of failed runs.
loop() {
	local name=$1 fail=0 i start=$SECONDS
	shift
	for i in $(seq "$runs"); do
		local bound=(timeout 120)
		[ "$(type -t "$1")" = function ] && bound=() # bounded itself
		if ! (cd "$bin" && "${bound[@]}" "$@") >"$bin/out" 2>&1; then
			fail=$((fail + 1))
			echo "$name: run $i failed:"
			sed 's/^/    /' "$bin/out"
		elif ! grep -q "ring of 4: 200 rounds, 800 hops" "$bin/out"; then
			fail=$((fail + 1))
			echo "$name: run $i gave no ring result:"
			sed 's/^/    /' "$bin/out"
		fi
		rm -f "$bin"/slurm-*.out
	done
	echo "$name: $((runs - fail)) of $runs runs succeeded ($((SECONDS - start)) s)"
	[ "$fail" -eq 0 ]
}

# sbatch_wait SCRIPT: submits SCRIPT and waits for the job's end, polling
# more often than sbatch --wait does; fails unless the job completed with
# exit code 0. The job's output is printed.
sbatch_wait() {
	local id state=
	id=$(sbatch --parsable "$1")
	for _ in $(seq 1200); do
		state=$(scontrol show job -o "$id" | grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' || true)
		case "$state" in JobState=PENDING* | JobState=RUNNING* | JobState=CONFIGURING* | JobState=COMPLETING* | "") ;;
		*) break ;;
		esac
		sleep 0.1
	done
	cat "slurm-$id.out"
	case "$state" in JobState=COMPLETED*ExitCode=0:0) ;;
	*) echo "job $id: $state"; return 1 ;;
	esac
}

status=0
if command -v mpirun >/dev/null; then
	mpirun=(mpirun -n 4 --oversubscribe)
	[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
	loop "mpirun -n 4 ./ring" "${mpirun[@]}" ./ring -rounds 200 || status=1
else
	echo "mpirun not found: Open MPI runs skipped"
	status=1
fi

if [ "$(id -u)" = 0 ] && command -v slurmctld >/dev/null; then
	export -f loop sbatch_wait
	export runs bin
	sed -i 's/-rounds 1000/-rounds 200/' "$bin/ring.sbatch"
	.ci/slurm.sh bash -c '
		s=0
		loop "srun -n 4 ./ring" srun --overcommit -n 4 ./ring -rounds 200 || s=1
		loop "sbatch ring.sbatch" sbatch_wait ring.sbatch || s=1
		exit $s' || status=1
else
	echo "Slurm runs skipped: they need root and slurm-wlm + munge"
	status=1
fi
exit $status
