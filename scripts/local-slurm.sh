#!/usr/bin/env bash
# A single-node SLURM on this machine, for the tests and for trying the SLURM profile.
#
#   scripts/local-slurm.sh start    install (Debian slurm-wlm 22.05 + munge) if needed, configure, start
#   scripts/local-slurm.sh stop     stop only the daemons this script started (by pid file)
#   scripts/local-slurm.sh status   sinfo / squeue
#
# Runs as root without systemd. State, config, logs and pid files live in
# $PARAMILL_SLURM_DIR (default /tmp/paramill-slurm). /etc/slurm/slurm.conf and gres.conf
# become links to the files there, so every client (sbatch, srun inside jobs, squeue)
# finds them -- but only where /etc/slurm has no slurm.conf of its own; a machine with a
# real SLURM keeps its config and this script refuses to start.
# The node offers $PARAMILL_SLURM_FAKE_GPUS (default 2) fake GPUs (gres gpu:fake) backed by
# plain files, so GPU requests can be scheduled and tested; no job can compute on them.
# There is no slurmdbd: `sacct` does not work, so use `slurm-status-command: squeue`
# (jobs stay visible to squeue for MinJobAge=300 s after they end).
set -euo pipefail

STATE=${PARAMILL_SLURM_DIR:-/tmp/paramill-slurm}
GPUS=${PARAMILL_SLURM_FAKE_GPUS:-2}
CONF=$STATE/slurm.conf
ETC=/etc/slurm

log() { echo "local-slurm: $*" >&2; }

install_packages() {
  local need=() p
  for p in slurmctld slurmd slurm-client munge; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  ((${#need[@]})) || return 0
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    log "needs root and apt-get to install: ${need[*]}"; exit 3
  fi
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    return 0  # a munged already answers on the default socket: use it, never stop it
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  if [[ ! -s /etc/munge/munge.key ]]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 status=none
  fi
  chown root:root /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge /etc/munge
  chmod 600 /etc/munge/munge.key
  chmod 700 /etc/munge
  chmod 755 /run/munge
  munged --force --pid-file="$STATE/munged.pid" --log-file="$STATE/munged.log" \
    --seed-file="$STATE/munged.seed"
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  log "munged did not come up; see $STATE/munged.log"; exit 1
}

write_config() {
  local host node mem cpus
  host=$(hostname -s)
  node=$(slurmd -C | head -1)
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$((mem * 9 / 10))  # leave the OS some room so the node is never drained for memory
  node=$(sed "s/ RealMemory=[0-9]*/ RealMemory=$mem/" <<<"$node")
  mkdir -p "$STATE/state" "$STATE/spool" "$STATE/dev"
  local files=""
  if ((GPUS > 0)); then
    for ((i = 0; i < GPUS; i++)); do : >"$STATE/dev/fakegpu$i"; done
    files="$STATE/dev/fakegpu[0-$((GPUS - 1))]"
  fi
  cat >"$CONF" <<EOF
# written by paramill scripts/local-slurm.sh -- single node, for tests
ClusterName=paramill-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldPort=${PARAMILL_SLURMCTLD_PORT:-6817}
SlurmdPort=${PARAMILL_SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((mem / cpus))
MailProg=/bin/true
MinJobAge=300
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
GresTypes=gpu
$node NodeAddr=127.0.0.1 $( ((GPUS > 0)) && echo "Gres=gpu:fake:$GPUS") State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  if ((GPUS > 0)); then
    echo "NodeName=$host Name=gpu Type=fake File=$files" >"$STATE/gres.conf"
  else
    : >"$STATE/gres.conf"
  fi
}

link_config() {
  mkdir -p "$ETC"
  local f
  for f in slurm.conf gres.conf; do
    if [[ -e $ETC/$f && ! -L $ETC/$f ]] || { [[ -L $ETC/$f ]] && [[ $(readlink "$ETC/$f") != "$STATE/$f" ]]; }; then
      log "$ETC/$f exists and is not ours: this machine has a SLURM of its own; not starting"
      exit 3
    fi
    ln -sfn "$STATE/$f" "$ETC/$f"
  done
}

unlink_config() {
  local f
  for f in slurm.conf gres.conf; do
    [[ -L $ETC/$f && $(readlink "$ETC/$f") == "$STATE/$f" ]] && rm -f "$ETC/$f"
  done
  return 0
}

start() {
  install_packages
  mkdir -p "$STATE"
  if alive "$STATE/slurmctld.pid" && alive "$STATE/slurmd.pid"; then
    log "already running (config $CONF)"; return 0
  fi
  start_munge
  write_config
  link_config
  alive "$STATE/slurmctld.pid" || slurmctld -i
  alive "$STATE/slurmd.pid" || slurmd
  local host state
  host=$(hostname -s)
  for _ in $(seq 120); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    case "$state" in
      idle*|mixed*|allocated*) log "up: node $host is $state (config $CONF)"; return 0 ;;
      down*|drain*) scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
  done
  log "node did not become idle; see $STATE/slurmctld.log and $STATE/slurmd.log"
  sinfo -N -l >&2 || true
  exit 1
}

stop_pid() {
  local file=$1
  alive "$file" || { rm -f "$file"; return 0; }
  local pid
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}

stop() {
  stop_pid "$STATE/slurmd.pid"
  stop_pid "$STATE/slurmctld.pid"
  stop_pid "$STATE/munged.pid"
  unlink_config
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) sinfo; squeue ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
