# Helpers of the scripts that run a client's own suite against kaas
# (kgo.sh, sarama.sh, kafkajs-sweep.sh, platformatic-sweep.sh); sourced, not
# run. The caller sets root (the checkout) and pids (an array of background
# processes to stop).

# free_port prints a loopback port nothing listens on.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port waits up to 20 s for a listener on loopback port $1.
wait_port() {
	for _ in $(seq 100); do
		if (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.2
	done
	echo "${0##*/}: nothing listens on port $1" >&2
	return 1
}

# start_apiserver DIR NAMESPACE starts the test kube-apiserver of
# deploy/testenv in DIR (its kubeconfig DIR/kubeconfig; its process added
# to pids), applies kaas's CRDs and creates NAMESPACE for the brokers.
start_apiserver() {
	local env=$1 ns=$2
	mkdir -p "$env"
	"$root/deploy/testenv/bin/testenv" up --dir "$env" >"$env.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do [ -f "$env/env" ] && break; sleep 0.2; done
	if [ ! -f "$env/env" ]; then
		echo "${0##*/}: the test apiserver did not start:" >&2
		tail -n 40 "$env.log" >&2
		return 1
	fi
	local k=(kubectl --kubeconfig "$env/kubeconfig")
	for c in kafkatopics kafkaacls kafkaquotas kafkausers; do "${k[@]}" apply -f "$root/deploy/base/crd-$c.yaml" >/dev/null; done
	"${k[@]}" wait --for=condition=Established --timeout=60s crd/kafkatopics.kaas.dev crd/kafkaacls.kaas.dev \
		crd/kafkaquotas.kaas.dev crd/kafkausers.kaas.dev >/dev/null
	"${k[@]}" create namespace "$ns" >/dev/null
}
