#!/usr/bin/env bash
# The compose demo's stack without Docker: Debian's Prometheus and the OpenTelemetry Collector
# (the one scripts/collector/build.sh builds) run natively with docker-compose.yml's configs and
# ports, and `slurm-otel demo` pushes OTLP to the Collector, which remote-writes into Prometheus;
# Prometheus scrapes the agents' self-monitoring and the Collector's own telemetry, and loads the
# alert rules. Grafana stays compose-only.
#
#   scripts/demo-stack.sh [demo options...]     runs until Ctrl-C or SIGTERM, then stops all three
#
# Everything listens on 127.0.0.1 only (compose publishes its ports there too): Prometheus :9090,
# the Collector's OTLP :4317 (gRPC) and :4318 (HTTP), its prometheus exporter :8889 (both with the
# bearer tokens of $DEMO_STACK_DIR/otlp-token and secrets/scrape-token), health
# :13133 and own telemetry :8888, the demo's :9836/:9837 (node) and :8080/:8081 (cluster). Each
# port can be moved with DEMO_STACK_<NAME>_PORT (PROMETHEUS, OTLP_GRPC, OTLP_HTTP,
# GATEWAY_METRICS, COLLECTOR_HEALTH, COLLECTOR_TELEMETRY, NODE_METRICS, NODE_MONITORING,
# CLUSTER_METRICS, CLUSTER_MONITORING). State (Prometheus's storage, the rendered configs, logs)
# goes to DEMO_STACK_DIR, by default a new temporary directory removed at the end.
# Needs: `npm ci` run (dist/), the `prometheus` package, and the Collector: OTELCOL names a binary,
# else scripts/collector/build.sh builds or reuses one (Go and the module proxy when not cached).
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "[demo-stack] ERROR: $*" >&2; exit 1; }
say() { echo "[demo-stack] $*" >&2; }

port() { # port NAME DEFAULT: DEMO_STACK_<NAME>_PORT or the default, checked
  local var="DEMO_STACK_$1_PORT" p
  p=${!var:-$2}
  [[ $p =~ ^[0-9]{1,5}$ ]] && ((p > 0 && p < 65536)) || die "$var must be a port number (got '$p')"
  echo "$p"
}
PROM=$(port PROMETHEUS 9090)
GRPC=$(port OTLP_GRPC 4317)
HTTP=$(port OTLP_HTTP 4318)
GW_METRICS=$(port GATEWAY_METRICS 8889)
HEALTH=$(port COLLECTOR_HEALTH 13133)
TELEMETRY=$(port COLLECTOR_TELEMETRY 8888)
NODE_METRICS=$(port NODE_METRICS 9836)
NODE_MONITORING=$(port NODE_MONITORING 9837)
CLUSTER_METRICS=$(port CLUSTER_METRICS 8080)
CLUSTER_MONITORING=$(port CLUSTER_MONITORING 8081)

[ -f dist/src/cli/main.js ] || die "dist/ is missing: run npm ci first (it builds)"
PROMETHEUS_BIN=$(command -v prometheus) || die "prometheus not found: apt-get install prometheus"
OTELCOL_BIN=${OTELCOL:-}
if [ -z "$OTELCOL_BIN" ]; then OTELCOL_BIN=$(scripts/collector/build.sh) || die "no Collector (scripts/collector/build.sh failed)"; fi
[ -x "$OTELCOL_BIN" ] || die "the Collector $OTELCOL_BIN is not an executable"

OWN_DIR=0
if [ -z "${DEMO_STACK_DIR:-}" ]; then DEMO_STACK_DIR=$(mktemp -d /tmp/slurm-otel-demo-stack.XXXXXX); OWN_DIR=1; fi
DIR=$DEMO_STACK_DIR
mkdir -p "$DIR/prometheus" "$DIR/targets" "$DIR/data" "$DIR/secrets"

# Prometheus: prometheus.yml and the alert rules as compose mounts them (paths relative to the
# config), and compose's target files with its service names replaced by 127.0.0.1 and the ports.
cp otel-config/prometheus.yml "$DIR/prometheus.yml"
cp otel-config/prometheus/alerts.yml "$DIR/prometheus/alerts.yml"
sed "s/^\(  *- \)slurm-otel$/\1127.0.0.1:$NODE_MONITORING/" otel-config/targets/slurm-otel-node-self.yml \
  >"$DIR/targets/slurm-otel-node-self.yml"
sed "s/^\(  *- \)slurm-otel$/\1127.0.0.1:$CLUSTER_MONITORING/" otel-config/targets/slurm-otel-cluster-self.yml \
  >"$DIR/targets/slurm-otel-cluster-self.yml"
sed "s/^\(  *- \)otel-collector$/\1127.0.0.1:$TELEMETRY/" otel-config/targets/otel-collector.yml \
  >"$DIR/targets/otel-collector.yml"

# The Collector: the gateway config as shipped, with a second config over it that moves every
# listen address to 127.0.0.1 (the shipped file listens on 0.0.0.0, as a gateway must).
cat >"$DIR/collector-local.yaml" <<EOF
extensions:
  health_check:
    endpoint: 127.0.0.1:$HEALTH
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$GRPC
      http:
        endpoint: 127.0.0.1:$HTTP
exporters:
  prometheus:
    endpoint: 127.0.0.1:$GW_METRICS
service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: $TELEMETRY
EOF

# The gateway requires a bearer token on every push and on :8889: a fresh one for this run, in a
# file only root reads, given to the Collector (OTLP_TOKEN_FILE, SCRAPE_TOKEN_FILE) and to the demo
# (--otlp-bearer-token-file). No newline at the end, as otel-config/collector-agent.yaml needs.
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/otlp-token")
# The scrape token sits where the copied prometheus.yml looks for it (secrets/, beside it).
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/secrets/scrape-token")

pids=()
stop_all() {
  trap - INT TERM EXIT
  local p i
  # The demo first (its last push still has a Collector to go to), then the Collector, then Prometheus.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[$i]}
    kill -TERM "$p" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "$OWN_DIR" = 1 ]; then rm -rf -- "$DIR"; fi
}
trap stop_all EXIT
trap 'say "stopping"; exit 0' INT TERM

# wait_http URL WHAT PID: polls URL for up to 60 s while PID lives.
wait_http() {
  for _ in $(seq 1 240); do
    kill -0 "$3" 2>/dev/null || die "$2 exited; its log: $DIR/$2.log"$'\n'"$(tail -n 20 "$DIR/$2.log")"
    curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0
    sleep 0.25
  done
  die "$2 did not answer at $1 within 60 s; its log: $DIR/$2.log"
}

"$PROMETHEUS_BIN" --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
  --storage.tsdb.retention.time=7d --web.enable-remote-write-receiver \
  --web.listen-address="127.0.0.1:$PROM" >"$DIR/prometheus.log" 2>&1 &
pids+=("$!")
wait_http "http://127.0.0.1:$PROM/-/ready" prometheus "$!"

SLURM_CLUSTER_NAME=demo PROMETHEUS_REMOTE_WRITE_URL="http://127.0.0.1:$PROM/api/v1/write" GOMEMLIMIT=400MiB \
  OTLP_TOKEN_FILE="$DIR/otlp-token" SCRAPE_TOKEN_FILE="$DIR/secrets/scrape-token" \
  "$OTELCOL_BIN" --config "file:$PWD/otel-config/collector-gateway.yaml" --config "file:$DIR/collector-local.yaml" \
  >"$DIR/collector.log" 2>&1 &
pids+=("$!")
wait_http "http://127.0.0.1:$HEALTH/" collector "$!"

say "Prometheus http://127.0.0.1:$PROM  Collector OTLP 127.0.0.1:$GRPC (gRPC) 127.0.0.1:$HTTP (HTTP)  logs in $DIR"
node dist/src/cli/main.js demo \
  --metrics-bind-address "127.0.0.1:$NODE_METRICS" --monitoring-bind-address "127.0.0.1:$NODE_MONITORING" \
  --cluster-metrics-bind-address "127.0.0.1:$CLUSTER_METRICS" \
  --cluster-monitoring-bind-address "127.0.0.1:$CLUSTER_MONITORING" \
  --otlp-endpoint "http://127.0.0.1:$HTTP" --otlp-bearer-token-file "$DIR/otlp-token" --otlp-interval 15s "$@" &
pids+=("$!")
wait "$!"
