#!/usr/bin/env bash
# A one-node SLURM on this machine, for the SLURM tests (tests/workflow/test_slurm.py) and CI.
#
#   .ci/slurm.sh start    install slurm-wlm + munge if missing, start munged, slurmctld, slurmd;
#                         wait until the node is idle (idempotent: a running cluster is kept)
#   .ci/slurm.sh start --no-gpu
#                         the same node without GPUs (no GRES), as on a CPU-only cluster; a
#                         running cluster of the other kind is stopped and started again
#   .ci/slurm.sh status   is it up? (exit 0 when the node answers and is usable)
#   .ci/slurm.sh stop     cancel its jobs, stop the daemons it started, remove its state
#
# Everything lives under $SLURM_STATE (default /tmp/genotile-slurm): slurm.conf, gres.conf,
# the munge key and socket, spool and state dirs, logs, pid files. The one thing outside it is
# a symlink /etc/slurm/slurm.conf -> $SLURM_STATE/slurm.conf (made only where no slurm.conf is
# there, removed by `stop`): Snakemake's slurm-jobstep plugin drops every SLURM_* variable,
# SLURM_CONF included, before the `srun` inside each job, so that srun finds its configuration
# only at the default path. The node is the machine's own short hostname at 127.0.0.1,
# with nproc CPUs, 90% of its memory, and two fake GPUs (GRES gpu:fake:2, links to /dev/null)
# so that jobs asking for a GPU can be scheduled on a machine without one (none with --no-gpu).
#
# Meant for a throwaway machine or a CI container running as root without systemd (Debian
# bookworm: slurm 22.05, munge 0.5.15). Ports: $SLURM_CTLD_PORT (6817), $SLURM_D_PORT (6818).
set -euo pipefail

STATE=${SLURM_STATE:-/tmp/genotile-slurm}
CONF=$STATE/slurm.conf
CTLD_PORT=${SLURM_CTLD_PORT:-6817}
D_PORT=${SLURM_D_PORT:-6818}
N_FAKE_GPUS=2  # 0 with `start --no-gpu`
ETC_CONF=/etc/slurm/slurm.conf
export SLURM_CONF=$CONF

die() {
  echo "slurm.sh: $*" >&2
  exit 1
}
say() { echo "slurm.sh: $*"; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_name() { uname -n | cut -d. -f1; }  # hostname -s, without needing the hostname package

node_state() {  # the node's state as sinfo prints it (idle, mixed, down*, ...), or nothing
  { timeout 10 sinfo -h -N -n "$(node_name)" -o %T 2>/dev/null || true; } | head -n 1
}

install_packages() {
  local missing=()
  command -v munged >/dev/null || missing+=(munge)
  { command -v slurmctld && command -v slurmd && command -v sbatch; } >/dev/null || missing+=(slurm-wlm)
  ((${#missing[@]})) || return 0
  [[ $(id -u) == 0 ]] || die "${missing[*]} not installed and not root: apt-get install ${missing[*]}"
  command -v apt-get >/dev/null || die "${missing[*]} not installed and no apt-get here"
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's maintainer scripts would try to start the daemons; there is no init system here,
  # and we start our own copies, so tell invoke-rc.d not to (policy-rc.d exit 101 = forbidden).
  local policy=/usr/sbin/policy-rc.d created_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
  fi
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"/tmp/genotile-slurm-apt.log" 2>&1 || {
    ((created_policy)) && rm -f "$policy"
    tail -n 20 /tmp/genotile-slurm-apt.log >&2
    die "apt-get install ${missing[*]} failed (log: /tmp/genotile-slurm-apt.log)"
  }
  ((created_policy)) && rm -f "$policy"
  return 0
}

write_config() {
  local node cpus mem_mb
  node=$(node_name)
  cpus=$(nproc)
  mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  local gres=""
  ((N_FAKE_GPUS)) && gres=" Gres=gpu:fake:$N_FAKE_GPUS"
  mkdir -p "$STATE"/{munge,ctld,spool,log,run,dev}
  chmod 711 "$STATE/munge"  # the socket must be reachable; the key itself is 0400
  for ((k = 0; k < N_FAKE_GPUS; k++)); do
    ln -sfn /dev/null "$STATE/dev/fakegpu$k"
  done
  cat >"$CONF" <<EOF
# Written by .ci/slurm.sh: a one-node test cluster on $node. Do not use in production.
ClusterName=genotile
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$D_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups, no accounting database: process tracking by parent pid, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Finished jobs stay visible to squeue for MinJobAge seconds: Snakemake's SLURM executor
# reads job states from squeue here (no sacct without accounting), and needs MinJobAge at
# least 3x its first status-check interval.
MinJobAge=600
ReturnToService=2
KillWait=5
InactiveLimit=0
# Take the node's CPUs and memory from this file, whatever slurmd detects (containers).
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb$gres State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  # Fake GPUs: links to /dev/null (slurmd wants character devices), so SLURM counts them,
  # hands one to each job asking for a GPU and sets CUDA_VISIBLE_DEVICES; no GPU is behind them.
  echo "AutoDetect=off" >"$STATE/gres.conf"
  if ((N_FAKE_GPUS)); then
    echo "NodeName=$node Name=gpu Type=fake File=$STATE/dev/fakegpu[0-$((N_FAKE_GPUS - 1))]" >>"$STATE/gres.conf"
  fi
  echo "$N_FAKE_GPUS" >"$STATE/gpus"
}

link_etc_conf() {  # /etc/slurm/slurm.conf -> ours, for the srun inside each job (see top)
  if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$CONF" ]]; then return 0; fi
  if [[ -e $ETC_CONF || -L $ETC_CONF ]]; then
    die "$ETC_CONF exists and is not a link to $CONF: another SLURM is configured on this machine. Move that file away (the srun inside Snakemake's jobs reads only $ETC_CONF) or run the SLURM tests against that cluster."
  fi
  mkdir -p "$(dirname "$ETC_CONF")"
  ln -s "$CONF" "$ETC_CONF"
}

unlink_etc_conf() {
  if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$CONF" ]]; then rm -f "$ETC_CONF"; fi
  return 0
}

start_munged() {
  local m=$STATE/munge
  if alive "$m/munged.pid"; then return 0; fi
  if [[ ! -s $m/munge.key ]]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile="$m/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
    else
      dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
    fi
    chmod 400 "$m/munge.key"
  fi
  rm -f "$m/munge.socket" "$m/munge.socket.lock"
  # --force: run where munged dislikes a permission on the way to its files (it would refuse to
  # start, failing CI for nothing on a throwaway machine); the key itself is 0400.
  munged --force --key-file="$m/munge.key" --socket="$m/munge.socket" --pid-file="$m/munged.pid" \
    --log-file="$m/munged.log" --seed-file="$m/munged.seed" >"$m/munged.out" 2>&1 ||
    die "munged failed to start: $(tail -n 5 "$m/munged.out" "$m/munged.log" 2>/dev/null)"
  for _ in $(seq 50); do [[ -S $m/munge.socket ]] && return 0; sleep 0.1; done
  die "munged started but its socket $m/munge.socket never appeared (log: $m/munged.log)"
}

start_daemon() {  # name pidfile
  local name=$1 pidfile=$2
  if alive "$pidfile"; then return 0; fi
  "$name" -f "$CONF" >"$STATE/log/$name.out" 2>&1 ||
    die "$name failed to start: $(tail -n 5 "$STATE/log/$name.out" "$STATE/log/$name.log" 2>/dev/null)"
  for _ in $(seq 50); do alive "$pidfile" && return 0; sleep 0.1; done
  die "$name did not stay up: $(tail -n 10 "$STATE/log/$name.log" 2>/dev/null)"
}

show_logs() {
  local f
  for f in slurmctld slurmd; do
    echo "--- $STATE/log/$f.log (last lines)" >&2
    tail -n 12 "$STATE/log/$f.log" >&2 2>/dev/null || true
  done
}

wait_idle() {
  local node state="" d
  node=$(node_name)
  for i in $(seq 120); do
    for d in slurmctld slurmd; do
      alive "$STATE/run/$d.pid" || { show_logs; die "$d exited (log: $STATE/log/$d.log)"; }
    done
    state=$(node_state)
    case $state in
      idle | mixed | allocated | completing) return 0 ;;
      down* | drain* | fail*)
        ((i % 10 == 5)) && scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true
        ;;
    esac
    sleep 0.5
  done
  show_logs
  die "node $node is not idle after 60 s (state: '${state:-no answer from slurmctld}'; logs under $STATE/log)"
}

cmd_start() {
  [[ $(id -u) == 0 ]] || die "must run as root (SlurmUser=root, munged, apt-get)"
  install_packages
  local running_gpus
  running_gpus=$(cat "$STATE/gpus" 2>/dev/null || echo 2)
  if [[ -f $CONF && $running_gpus != "$N_FAKE_GPUS" ]]; then
    say "the cluster here has $running_gpus GPUs, $N_FAKE_GPUS wanted: starting it again"
    cmd_stop
  fi
  if alive "$STATE/run/slurmctld.pid" && alive "$STATE/run/slurmd.pid" && [[ -f $CONF ]]; then
    link_etc_conf
    wait_idle
    say "already up: node $(node_name) $(node_state) (config $CONF)"
    return 0
  fi
  [[ -f $CONF ]] || write_config
  link_etc_conf
  start_munged
  start_daemon slurmctld "$STATE/run/slurmctld.pid"
  start_daemon slurmd "$STATE/run/slurmd.pid"
  wait_idle
  local gpus="no GPUs"
  ((N_FAKE_GPUS)) && gpus="gres gpu:fake:$N_FAKE_GPUS"
  say "up: node $(node_name) $(node_state), $(nproc) CPUs, $gpus, partition debug (config $CONF)"
}

cmd_status() {
  if [[ ! -f $CONF ]]; then
    say "down (no $CONF)"
    return 1
  fi
  local state
  state=$(node_state)
  for d in munge/munged slurmctld slurmd; do
    local pidfile=$STATE/run/$d.pid
    [[ $d == munge/munged ]] && pidfile=$STATE/munge/munged.pid
    alive "$pidfile" || {
      say "down (${d#munge/} not running; logs under $STATE)"
      return 1
    }
  done
  case $state in
    idle | mixed | allocated | completing)
      say "up: node $(node_name) $state, $(cat "$STATE/gpus" 2>/dev/null || echo 2) fake GPUs (config $CONF)"
      return 0
      ;;
    *)
      say "not usable: node $(node_name) state '${state:-no answer}'"
      return 1
      ;;
  esac
}

our_stepds() {  # slurmstepd processes started by our slurmd (they carry our SLURM_CONF)
  local dir
  for dir in /proc/[0-9]*; do
    [[ $(cat "$dir/comm" 2>/dev/null) == slurmstepd ]] || continue
    tr '\0' '\n' <"$dir/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF" && echo "${dir#/proc/}"
  done
  return 0
}

stop_pid() {  # pidfile: TERM, wait up to 5 s, then KILL
  local pidfile=$1 pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

cmd_stop() {
  if [[ ! -d $STATE ]]; then
    unlink_etc_conf
    return 0
  fi
  if alive "$STATE/run/slurmctld.pid"; then
    timeout 10 scancel --full --quiet --partition=debug >/dev/null 2>&1 || true
    for _ in $(seq 30); do
      [[ -z $(timeout 5 squeue -h -t RUNNING,COMPLETING,PENDING -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  stop_pid "$STATE/run/slurmd.pid"
  stop_pid "$STATE/run/slurmctld.pid"
  local pids
  pids=$(our_stepds)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
  fi
  if alive "$STATE/munge/munged.pid"; then
    munged --stop --socket="$STATE/munge/munge.socket" >/dev/null 2>&1 || stop_pid "$STATE/munge/munged.pid"
  fi
  stop_pid "$STATE/munge/munged.pid"
  case $STATE in
    / | /tmp | /root | "$HOME") die "refusing to remove state folder $STATE" ;;
  esac
  unlink_etc_conf
  rm -rf "$STATE"
  say "stopped, $STATE removed"
}

case ${1:-} in
  start)
    case ${2:-} in
      "") ;;
      --no-gpu) N_FAKE_GPUS=0 ;;
      *) die "unknown option ${2}: start [--no-gpu]" ;;
    esac
    cmd_start
    ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 start [--no-gpu]|stop|status   (state: \$SLURM_STATE, default /tmp/genotile-slurm)" >&2
    exit 2
    ;;
esac
