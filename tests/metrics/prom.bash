# SPDX-License-Identifier: MIT
# Sourced by tests (not a test itself): Debian's prometheus on 127.0.0.1 with a config
# and data dir of its own, scraping the targets it is given every second, queried
# through its HTTP API with PromQL, stopped by its PID. Used by tests/metrics/metrics.sh
# and tests/lab/metrics.sh (the lab guests' agents as targets, through their management
# forwards on the build host's 127.0.0.1):
#
#   source tests/metrics/prom.bash
#   prom_start DIR RULES_FILE_OR_EMPTY HOST:PORT...   # up within 30 s (PROM_START_SECONDS), or returns 1
#   prom_wait 'fabricctl_macsec_secy_encrypting == 1' 60   # a series within 60 s
#   prom_value 'sum(fabricctl_rotations_total{result="completed"})'   # first value
#   prom_query 'up'                                   # the API's JSON
#   prom_stop                                         # (the caller's cleanup calls it)
#
# Needs curl, jq, python3 and prometheus (scripts/deps.sh installs them).
PROM_PID="" PROM_URL="" PROM_DIR=""
PROM_START_SECONDS=${PROM_START_SECONDS:-30}

prom_free_port() {
	"${FCTL_PYTHON:-/usr/bin/python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_start DIR RULES TARGET...: writes DIR/prometheus.yml (job fabricctl-agent, 1 s
# scrapes and rule evaluation, RULES loaded when not empty), starts prometheus with its
# TSDB in DIR/data and its log in DIR/prometheus.log, waits for /-/ready (at most
# PROM_START_SECONDS: a loaded machine may need more than the default 30).
prom_start() {
	local dir=$1 rules=$2 port targets t
	shift 2
	mkdir -p "$dir/data" || return 1
	targets=""
	for t in "$@"; do targets="$targets${targets:+, }\"$t\""; done
	{
		echo "global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }"
		[ -n "$rules" ] && echo "rule_files: [ \"$rules\" ]"
		echo "scrape_configs:"
		echo "  - job_name: fabricctl-agent"
		echo "    static_configs:"
		echo "      - targets: [ $targets ]"
	} >"$dir/prometheus.yml"
	port=$(prom_free_port) || return 1
	PROM_DIR=$dir
	PROM_URL=http://127.0.0.1:$port
	prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
		--web.listen-address="127.0.0.1:$port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
	PROM_PID=$!
	for _ in $(seq $((PROM_START_SECONDS * 10))); do
		curl -sf "$PROM_URL/-/ready" >/dev/null 2>&1 && return 0
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$dir/prometheus.log" >&2
	return 1
}

# prom_query EXPR: the JSON of /api/v1/query (instant query, now).
prom_query() {
	curl -sf --max-time 10 --data-urlencode "query=$1" "$PROM_URL/api/v1/query"
}

# prom_ok EXPR: the query succeeds (status success: it parsed and ran).
prom_ok() {
	[ "$(prom_query "$1" | jq -r .status 2>/dev/null)" = success ]
}

# prom_value EXPR: the first sample's value ("" when there is none).
prom_value() {
	prom_query "$1" | jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}

# prom_wait EXPR SECONDS: until EXPR returns at least one series (0), else 1. The API's
# JSON is compact: a query that ran and found nothing says "result":[]; read without jq
# (a jq start at every poll was about half of a wait's CPU).
prom_wait() {
	local i j
	for i in $(seq $(($2 * 4))); do
		j=$(prom_query "$1")
		[[ $j == *'"status":"success"'* && $j == *'"result":'* && $j != *'"result":[]'* ]] &&
			return 0
		sleep 0.25
	done
	return 1
}

# prom_stop: stops the server by its PID and waits for it.
prom_stop() {
	[ -n "$PROM_PID" ] || return 0
	kill "$PROM_PID" 2>/dev/null
	wait "$PROM_PID" 2>/dev/null
	PROM_PID=""
}
