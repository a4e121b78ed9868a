#!/usr/bin/env bash
# A `docker` for sarama's functional suite run by .ci/sarama.sh against three
# kaas brokers (SARAMA_BROKERS=3): it implements the only Docker calls the
# suite makes against an existing cluster, on the kaas processes that stand
# in for its docker-compose services kafka-1..kafka-3:
#   docker compose stop SERVICE...   SIGTERM, then SIGKILL after 10 s, as
#                                    Docker's stop does with its default grace
#                                    (SARAMA_STOP_SIGNAL=KILL: SIGKILL at once,
#                                    a crash)
#   docker compose start SERVICE...  starts the broker again with the same
#                                    flags and waits until its /readyz answers
#                                    (the suite then waits for a restarted
#                                    Kafka broker to rejoin the ISR, which a
#                                    single-copy kaas partition never reports)
#   docker compose logs [-t] [--since RFC3339] SERVICE...
#                                    the broker's log (JSON lines at or after
#                                    --since; other lines, such as a panic's
#                                    trace, always)
# Anything else fails, naming the call. SARAMA_CLUSTER_DIR is the directory
# sarama.sh keeps each service's launcher (SERVICE.run), pid, log and HTTP
# address (SERVICE.http) in.
set -euo pipefail
dir=${SARAMA_CLUSTER_DIR:?docker shim: SARAMA_CLUSTER_DIR is not set}
grace=10
signal=${SARAMA_STOP_SIGNAL:-TERM}
case $signal in TERM | KILL) ;; *)
	echo "docker shim: SARAMA_STOP_SIGNAL must be TERM or KILL" >&2
	exit 1
	;;
esac

fail() {
	echo "docker shim: $*" >&2
	exit 1
}
[ "${1:-}" = compose ] || fail "unsupported call: docker $*"
shift
sub=${1:-}
shift || true

running() { # pid: alive and not a zombie
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

service_pid() {
	[ -f "$dir/$1.run" ] || fail "no such service: $1"
	cat "$dir/$1.pid" 2>/dev/null || true
}

stop() {
	local svc=$1 pid
	pid=$(service_pid "$svc")
	if [ -z "$pid" ] || ! running "$pid"; then
		echo " Container $svc  Stopped" >&2
		return
	fi
	kill -"$signal" "$pid" 2>/dev/null || true
	for _ in $(seq $((grace * 10))); do
		running "$pid" || break
		sleep 0.1
	done
	if running "$pid"; then
		echo " Container $svc  Killed after ${grace}s" >&2
		kill -KILL "$pid" 2>/dev/null || true
		while running "$pid"; do sleep 0.1; done
	fi
	echo "--- $svc stopped $(date -u +%FT%TZ) ---" >>"$dir/$svc.log"
	echo " Container $svc  Stopped" >&2
}

start() {
	local svc=$1 pid
	pid=$(service_pid "$svc")
	if [ -n "$pid" ] && running "$pid"; then
		echo " Container $svc  Running" >&2
		return
	fi
	echo "--- $svc started $(date -u +%FT%TZ) ---" >>"$dir/$svc.log"
	bash "$dir/$svc.run" >>"$dir/$svc.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$dir/$svc.pid"
	local http
	http=$(cat "$dir/$svc.http")
	for _ in $(seq 600); do
		if curl -sf "http://$http/readyz" >/dev/null 2>&1; then
			echo " Container $svc  Started" >&2
			return
		fi
		running "$pid" || fail "$svc exited at start; its log: $dir/$svc.log"
		sleep 0.2
	done
	fail "$svc not ready after 120 s; its log: $dir/$svc.log"
}

logs() {
	local since=0 services=()
	while [ $# -gt 0 ]; do
		case $1 in
		-t | --timestamps) shift ;;
		--since)
			since=$(date -u -d "$2" +%s) || fail "logs: bad --since $2"
			shift 2
			;;
		-*) fail "logs: unsupported option $1" ;;
		*)
			services+=("$1")
			shift
			;;
		esac
	done
	for svc in "${services[@]}"; do
		service_pid "$svc" >/dev/null
		jq -rR --argjson since "$since" --arg svc "$svc" '
			. as $line
			| (try fromjson catch null) as $j
			| if ($j | type) != "object" or ($j.time | type) != "string" then "\($svc)  | \($line)"
			  elif ($j.time | sub("\\.[0-9]+"; "") | sub("\\+00:00$"; "Z") | fromdateiso8601) >= $since then "\($svc)  | \($line)"
			  else empty end' "$dir/$svc.log"
	done
}

case $sub in
stop | start)
	[ $# -gt 0 ] || fail "compose $sub needs a service"
	for svc in "$@"; do "$sub" "$svc"; done
	;;
logs) logs "$@" ;;
*) fail "unsupported call: docker compose $sub $*" ;;
esac
