# shellcheck shell=bash
# with_dir_lock <lock-dir> <command> [args...] — runs the command while holding a cross-process lock, with the same
# on-disk protocol as server/common/dir-lock.ts, so setup's shell steps and its Node steps exclude each other on one
# lock: the lock is a directory created with mkdir (atomic) holding its owner's pid; a lock whose owner died, or that
# got no pid within 10 s, is removed by whoever first creates <lock-dir>.break, which re-checks it there (so a lock
# another waiter has just taken over is never removed). Sourced by server/setup/env.sh.

# True while the lock's owner lives (or the lock is too new to have its pid written yet).
dir_lock_held() {
  local lock="$1" pid
  if pid="$(cat "$lock/pid" 2>/dev/null)" && [ -n "$pid" ]; then
    dir_lock_running "$pid"
    return
  fi
  [ -d "$lock" ] || return 1
  # No pid yet: held while the directory is younger than 10 s.
  [ $(($(date +%s) - $(dir_lock_mtime "$lock"))) -lt 10 ]
}

# kill -0 fails for another user's process too: /proc tells those apart on Linux.
dir_lock_running() { kill -0 "$1" 2>/dev/null || [ -d "/proc/$1" ]; }

# Modification time in epoch seconds (GNU stat, then BSD stat); now when the path is gone.
dir_lock_mtime() {
  local t
  t="$(stat -c %Y "$1" 2>/dev/null || stat -f %m "$1" 2>/dev/null || true)"
  case "$t" in '' | *[!0-9]*) date +%s ;; *) echo "$t" ;; esac
}

# True when the lock exists and is dead: its owner's pid is not running, or it got no pid within 10 s. (An absent lock
# is not stale: a waiter may be creating it right now.)
dir_lock_stale() {
  local lock="$1" pid
  if pid="$(cat "$lock/pid" 2>/dev/null)" && [ -n "$pid" ]; then
    ! dir_lock_running "$pid"
    return
  fi
  [ -d "$lock" ] && [ $(($(date +%s) - $(dir_lock_mtime "$lock"))) -ge 10 ]
}

# Removes a dead owner's lock under <lock>.break (a stale lock can only go away through a breaker, so it is still the
# stale one when removed); fails while another process is breaking it. A .break left by a crashed breaker (older than
# 10 s) is removed.
dir_lock_break() {
  local lock="$1"
  if mkdir "$lock.break" 2>/dev/null; then
    if dir_lock_stale "$lock"; then rm -rf "$lock"; fi
    rmdir "$lock.break"
    return 0
  fi
  if [ $(($(date +%s) - $(dir_lock_mtime "$lock.break"))) -ge 10 ]; then rmdir "$lock.break" 2>/dev/null || true; fi
  return 1
}

# The command runs in an `||` context, where bash ignores `set -e`: it must check its own steps (cmd || return).
DIR_LOCK_HELD=""
with_dir_lock() {
  local lock="$1" waited=""
  shift
  mkdir -p "$(dirname "$lock")"
  until mkdir "$lock" 2>/dev/null; do
    if ! dir_lock_held "$lock" && dir_lock_break "$lock"; then continue; fi
    if [ -z "$waited" ]; then
      echo "gantry-setup: waiting for another setup (lock $lock, held by pid $(cat "$lock/pid" 2>/dev/null || echo '?'))" >&2
      waited=1
    fi
    sleep 1
  done
  echo "$$" >"$lock/pid"
  DIR_LOCK_HELD="$lock"
  trap 'rm -rf "$DIR_LOCK_HELD"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local rc=0
  "$@" || rc=$?
  rm -rf "$lock"
  DIR_LOCK_HELD=""
  trap - EXIT INT TERM
  return "$rc"
}
