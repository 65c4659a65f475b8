#!/bin/sh
# Regenerates examples/matmul/RESULTS.md, figure2.svg and models.json: the
# master and three workers limited to 100%, 50% and 25% of a CPU. Fifteen
# runs of each strategy per size, the strategies taking turns: the runs of
# one strategy at n = 384 spread from 0.7x to 2x their median (load 2-3),
# and with nine runs the medians of one same split (a static VRP split and
# VRP-SS in one phase) differed by 7-19% at n = 384-896.
#
#   examples/matmul/run.sh [sizes] [reps]
set -eu
cd "$(dirname "$0")/../.."
sizes=${1:-384,512,640,768,896}
reps=${2:-15}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/pcorrun" ./cmd/pcorrun
go build -o "$tmp/matmul" ./examples/matmul
# A run that fails (on a loaded machine a peer can be taken for gone) is
# run again, at most twice. The processes do not measure their links
# (--prices off): one host, one fabric, nothing to price, and the probes'
# CPU time would fall inside the workers' quotas. (With the probes on the
# run completes too: sizes 384-896 at load 32-41.)
for try in 1 2 3; do
	echo "try $try: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	"$tmp/pcorrun" --prices off --heartbeat-timeout 30s -n 4 --cpu-share 1=100,2=50,3=25 \
		"$tmp/matmul" -sizes "$sizes" -reps "$reps" -out examples/matmul && exit 0
done
echo "run.sh: failed three times" >&2
exit 1
