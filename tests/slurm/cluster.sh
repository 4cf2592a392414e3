#!/usr/bin/env bash
# A throwaway single-node SLURM cluster for the `slurm` tests, entirely inside one folder.
#
#   cluster.sh install      apt-get Debian's slurm-wlm daemons, client and munge (root)
#   cluster.sh start DIR    write slurm.conf + a munge key into DIR, start munged, slurmctld, slurmd;
#                           prints `export SLURM_CONF=DIR/slurm.conf` once the node takes jobs
#   cluster.sh stop DIR     stop the three daemons started for DIR and wait until they are gone
#
# The configuration lives in DIR; /etc/slurm/slurm.conf links to it while the cluster runs, because
# the plugin's job steps call srun with SLURM_* variables (SLURM_CONF too) cleared, so srun only finds
# the default path. `start` refuses to shadow a configuration it did not write.
#
# Accounting is off on purpose (no slurmdbd), like many small clusters: job status comes from
# squeue, so MinJobAge keeps finished jobs visible long enough for Snakemake's status checks.
set -euo pipefail

SYSTEM_CONF=/etc/slurm/slurm.conf

die() { echo "cluster.sh: $*" >&2; exit 1; }

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null; then
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "installing SLURM needs root: run 'sudo $0 install'"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

write_config() {
    local dir=$1 host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    # Leave a little memory to the system; jobs ask for their rule's mem_mb.
    mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    cat >"$dir/slurm.conf" <<EOF
ClusterName=regionbench-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=600
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mungekey --create --keyfile="$dir/munge.key" --force
    chmod 600 "$dir/munge.key"
}

# The folder of the test cluster that owns $SYSTEM_CONF, or nothing when the link is absent.
owner() {
    local target
    target=$(readlink "$SYSTEM_CONF" || true)
    case "$target" in
        */slurm.conf) dirname "$target" ;;
    esac
}

cluster_alive() {
    local pid
    pid=$(cat "$1/slurmctld.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Make $SYSTEM_CONF free for a new cluster: a cluster whose run was killed (its daemons gone) is
# cleaned up; a live one (another test run on this machine) is waited for, since both need the
# same ports; a configuration this script did not write is never touched.
release_system_conf() {
    local dir
    if [ -e "$SYSTEM_CONF" ] && [ ! -L "$SYSTEM_CONF" ]; then
        die "$SYSTEM_CONF exists: this machine has a SLURM setup that the test cluster would shadow"
    fi
    dir=$(owner)
    [ -n "$dir" ] || { rm -f "$SYSTEM_CONF"; return 0; }
    for _ in $(seq 600); do
        cluster_alive "$dir" || { stop "$dir"; return 0; }
        sleep 1
    done
    die "$SYSTEM_CONF belongs to the test cluster in $dir, still running after 10 min: '$0 stop $dir'"
}

start() {
    local dir
    dir=$(realpath "$1")
    command -v slurmctld >/dev/null || die "SLURM is not installed: run '$0 install' first (root)"
    release_system_conf
    chmod 700 "$dir"
    write_config "$dir"
    mkdir -p "$(dirname "$SYSTEM_CONF")"
    ln -sfn "$dir/slurm.conf" "$SYSTEM_CONF"
    munged --force --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
        --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    # The node is usable once sinfo reports it idle.
    for _ in $(seq 60); do
        if sinfo --noheader --format=%t 2>/dev/null | grep -qx idle; then
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 1
    done
    stop "$dir"
    die "the test cluster did not come up in 60 s; see $dir/log/"
}

stop_pidfile() {
    local pidfile=$1 pid
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    local dir
    dir=$(realpath -m "$1")
    stop_pidfile "$dir/slurmd.pid"
    stop_pidfile "$dir/slurmctld.pid"
    stop_pidfile "$dir/munged.pid"
    if [ "$(readlink "$SYSTEM_CONF" || true)" = "$dir/slurm.conf" ]; then
        rm -f "$SYSTEM_CONF"
    fi
}

case "${1:-}" in
    install) install_packages ;;
    start) [ $# = 2 ] || die "usage: $0 start DIR"; start "$2" ;;
    stop) [ $# = 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
    *) die "usage: $0 install | start DIR | stop DIR" ;;
esac
