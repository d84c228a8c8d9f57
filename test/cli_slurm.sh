#!/usr/bin/env bash
# cli_slurm.sh - the Slurm driver for real on this machine (TAP): starts
# munged, slurmctld and slurmd (a one-node cluster in a temporary
# directory, its own ports and munge socket), runs prove/divided/slurm.sh
# at depth 3 with 3 shards, checks the ruledb against the undivided run
# byte for byte, checks a failing shard is reported by name and that a
# resubmission redoes only it; stops the daemons on exit. Needs root and
# Debian's slurm-wlm and munge (./configure installs them); without them
# it says why and skips. BIN names the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d)
. "$(dirname "$0")/tap.inc"
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BIN" && pwd)
S=$root/prove/divided/slurm.sh
ax=$root/opspecs/axioms.ax
D=$tmp/slurm

skip_all() { echo "ok 1 # SKIP $*"; echo "1..1"; rm -rf "$tmp"; exit 0; }
for p in munged slurmctld slurmd sbatch squeue scontrol; do
    command -v "$p" >/dev/null || skip_all "$p not installed (./configure installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip_all "not root: slurmd must run as root to start jobs as their user"

stop_cluster() {
    SLURM_CONF=$D/slurm.conf scontrol shutdown >/dev/null 2>&1
    for f in "$D/slurmd.pid" "$D/slurmctld.pid"; do
        local pid
        pid=$(cat "$f" 2>/dev/null) || continue
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill "$pid" 2>/dev/null
    done
    munged -s --socket="$D/munge.sock" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap stop_cluster EXIT

# A one-node cluster: the machine's CPUs and memory, no cgroups (process
# tracking by /proc, no task plugin), ports from our pid so two test runs
# do not meet, the scheduler woken every 2 s so dependencies clear fast.
mkdir -p "$D/state" "$D/spool"
cp /etc/munge/munge.key "$D/munge.key" 2>/dev/null ||
    dd if=/dev/urandom of="$D/munge.key" bs=1 count=1024 2>/dev/null
chmod 600 "$D/munge.key"
host=$(hostname -s)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
port=$(( 20000 + ($$ % 5000) * 2 ))
cat >"$D/slurm.conf" <<EOC
ClusterName=tasoctest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=tasoctest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOC
export SLURM_CONF=$D/slurm.conf
check "munged starts" munged -f --socket="$D/munge.sock" --key-file="$D/munge.key" \
    --pid-file="$D/munged.pid" --log-file="$D/munged.log" --seed-file="$D/munged.seed"
check "slurmctld starts" slurmctld -f "$D/slurm.conf"
check "slurmd starts" slurmd -f "$D/slurm.conf"
up() { for _ in $(seq 1 60); do sinfo -h -o %T 2>/dev/null | grep -qx idle && return 0; sleep 0.5; done; return 1; }
check "the node is up and idle" up
check "sbatch --test-only accepts the step script as a job array" sh -c "
    sbatch --test-only --array=0-2 '$root/prove/divided/step.sh' '$tmp/w' synth 2>&1 | grep -q 'to start at'"

SY=(--max-ops 3 --ops conv2d,relu,ewadd,concat,split0,split1 --threads 1)
drive() { "$S" --bin "$1" -d "$2" -o "$2/rules.tasodb" -n 3 --no-timings --axioms "$ax" \
              --synth-args "${SY[*]}" --prove-args "--jobs 1" --sbatch "--cpus-per-task=1" --wait; }
"$BIN/synth" -q --no-timings "${SY[@]}" -o "$tmp/whole-cands.tasodb"
"$BIN/prove" -q --no-timings --jobs 2 --axioms "$ax" "$tmp/whole-cands.tasodb" -o "$tmp/whole.tasodb"
check "slurm.sh, 3 shards at depth 3: exit 0" status_is 0 drive "$BIN" "$tmp/w"
check "... the five stages submitted" grep -q "submitted synth\[0,1,2\]=[0-9]* part=[0-9]* candidates=[0-9]* prove=[0-9]* final=[0-9]*" "$tmp/out"
check "... the arrays ran as Slurm tasks (logs of tasks 0-2)" sh -c "
    ls '$tmp/w/logs'/slurm-synth-*_2.out '$tmp/w/logs'/slurm-prove-*_2.out >/dev/null"
check "... ruledb byte-identical to the undivided synth + prove" cmp -s "$tmp/w/rules.tasodb" "$tmp/whole.tasodb"
check "... which has rules" sh -c "'$BIN/ruledb' info '$tmp/w/rules.tasodb' | grep -q '^rules: *[1-9]'"

# A synth whose shard 1 always fails.
mkdir "$tmp/fake"
ln -s "$BIN/prove" "$BIN/ruledb" "$tmp/fake/"
printf '#!/bin/sh\ncase " $* " in *" --shard 1/3 "*) echo "synth: injected failure" >&2; exit 2 ;; esac\nexec %s/synth "$@"\n' \
    "$BIN" >"$tmp/fake/synth"
chmod +x "$tmp/fake/synth"
check "shard 1 fails under Slurm: exit 1" status_is 1 drive "$tmp/fake" "$tmp/w2"
check "... the failed step named" grep -q "synth-1 (log: .*synth-1.log)" "$tmp/err"
check "... the step's own report in its log" grep -q "injected failure" "$tmp/w2/logs/synth-1.log"
check "... nothing after it ran" test ! -e "$tmp/w2/candidates.tasodb" -a ! -e "$tmp/w2/rules.tasodb"
check "resubmitted with a working synth: exit 0" status_is 0 drive "$BIN" "$tmp/w2"
check "... only shard 1's synth resubmitted" grep -q "submitted synth\[1\]=" "$tmp/out"
check "... ruledb byte-identical to the undivided run" cmp -s "$tmp/w2/rules.tasodb" "$tmp/whole.tasodb"
echo "1..$n"
