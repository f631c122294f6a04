#!/bin/bash
# Reproduces the praxis-spike stages 1-6 in a fresh work dir (default /tmp/praxis-spike/rerun).
# Network: only PyPI (pip). Inputs that came from the search index are kept in /tmp/praxis-spike/overlay
# (see /tmp/praxis-spike/MANIFEST.txt); DDL in /tmp/praxis-spike/praxis_target_ddl*.sql.
# Run as root (PostgreSQL is run as the `postgres` user via runuser). Stops every server it started on exit.
set -euo pipefail
SPIKE=/tmp/praxis-spike
WORK=${WORK:-$SPIKE/rerun}
MIRROR=/work/.mirror/opendatahub-io+ogx/repo
SRC_PORT=${SRC_PORT:-54321} TGT_PORT=${TGT_PORT:-54322} OGX_PORT=${OGX_PORT:-18321}
PGBIN=/usr/lib/postgresql/15/bin
PW=spikepw
PY=${PY:-$(pyenv root)/versions/3.12.1/bin/python3.12}
export SETUPTOOLS_SCM_PRETEND_VERSION=1.3.1.dev0 OGX_CONFIG_DIR=$WORK/ogx-config-dir COLUMNS=160
ts() { date +%s; }; T0=$(ts)
say() { echo "[$(( $(ts) - T0 ))s] $*"; }

OGX_PID=
cleanup() {
  [ -n "$OGX_PID" ] && kill "$OGX_PID" 2>/dev/null || true
  for c in src tgt; do
    [ -f "$WORK/pg/$c/postmaster.pid" ] && runuser -u postgres -- $PGBIN/pg_ctl -D "$WORK/pg/$c" -m fast stop >/dev/null || true
  done
}
trap cleanup EXIT

mkdir -p "$WORK" "$OGX_CONFIG_DIR"
ln -sfn /tmp/pypi-praxis/venv "$WORK/venv"
# ---- Stage 3: two PG clusters (postgres user), 127.0.0.1, trust local / scram TCP
say "stage3"
rm -rf "$WORK/pg"; mkdir -p "$WORK/pg"; chown postgres:postgres "$WORK/pg"
echo $PW > "$WORK/pg/pwfile"; chown postgres "$WORK/pg/pwfile"
for spec in src:$SRC_PORT:ogx tgt:$TGT_PORT:praxis; do
  IFS=: read -r name port db <<<"$spec"
  runuser -u postgres -- $PGBIN/initdb -D "$WORK/pg/$name" -U postgres --pwfile="$WORK/pg/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  runuser -u postgres -- $PGBIN/pg_ctl -D "$WORK/pg/$name" -l "$WORK/pg/$name.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $WORK/pg" start >/dev/null
  runuser -u postgres -- $PGBIN/psql -h "$WORK/pg" -p "$port" -U postgres -qc "CREATE DATABASE $db"
done
PSRC="env PGPASSWORD=$PW $PGBIN/psql -h 127.0.0.1 -p $SRC_PORT -U postgres -d ogx -v ON_ERROR_STOP=1"
PTGT="env PGPASSWORD=$PW $PGBIN/psql -h 127.0.0.1 -p $TGT_PORT -U postgres -v ON_ERROR_STOP=1"

# ---- Stage 4: real OGX server writes the source data
say "stage4"
CFG=$WORK/source-config.yaml
sed -e "s/port: 54321/port: $SRC_PORT/" $SPIKE/source-config.yaml > "$CFG"
setsid "$WORK/venv/bin/ogx" run "$CFG" --port "$OGX_PORT" --insecure > "$WORK/ogx-server.log" 2>&1 &
OGX_PID=$!
B=http://127.0.0.1:$OGX_PORT/v1
for _ in $(seq 1 60); do curl -sf -m 2 $B/health >/dev/null && break; sleep 1; done
curl -sf $B/health
C1=$(curl -sf -X POST $B/conversations -H 'content-type: application/json' \
  -d '{"items":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"assistant","content":"hello there"}],"metadata":{"topic":"greeting"}}' \
  | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
C2=$(curl -sf -X POST $B/conversations -H 'content-type: application/json' \
  -d '{"items":[{"type":"message","role":"user","content":"what is 2+2?"}],"metadata":{"topic":"math"}}' \
  | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
curl -sf -X POST $B/conversations/$C2/items -H 'content-type: application/json' \
  -d '{"items":[{"type":"message","role":"assistant","content":"4"}]}' >/dev/null
curl -sf $B/conversations/$C1; echo; curl -sf "$B/conversations/$C2/items?order=asc"; echo
kill $OGX_PID; wait $OGX_PID 2>/dev/null || true; OGX_PID=
$PSRC -tAc "select count(*) from openai_conversations" | grep -qx 2
$PSRC -tAc "select count(*) from conversation_items" | grep -qx 4

# ---- Stage 5: Praxis target tables (see praxis_target_ddl.sql header for provenance)
say "stage5"
$PTGT -d praxis -q -f $SPIKE/praxis_target_ddl.sql
$PTGT -d postgres -qc "CREATE DATABASE praxis_121"
$PTGT -d praxis_121 -q -f $SPIKE/praxis_target_ddl_121de227.sql

# ---- Stage 6: migrate (dry-run, live x2, idempotency), plus the expected failure on the 121de227 layout
say "stage6"
OGXM="$WORK/venv/bin/ogx migrate praxis --fallback-tenant t --fallback-owner-subject o"
$OGXM --dry-run "$CFG" > "$WORK/dry.log" 2>&1
for run in 1 2; do
  PRAXIS_DATABASE_URL=postgresql://postgres:$PW@127.0.0.1:$TGT_PORT/praxis $OGXM "$CFG" > "$WORK/live$run.log" 2>&1
  counts=$($PTGT -d praxis -tAc "select (select count(*) from openai_conversations)||','||(select count(*) from openai_conversation_items)")
  say "live run $run: conversations,items = $counts"; [ "$counts" = "2,4" ]
done
$PTGT -d praxis -c "select conversation_id, tenant_id, owner_subject, owner_issuer, metadata from openai_conversations order by 1" \
  -c "select conversation_id, position, item_data from openai_conversation_items order by conversation_id, position"
if PRAXIS_DATABASE_URL=postgresql://postgres:$PW@127.0.0.1:$TGT_PORT/praxis_121 $OGXM "$CFG" > "$WORK/live_121.log" 2>&1; then
  say "UNEXPECTED: praxis_121 (schemas.rs@121de227 layout) accepted the INSERTs"
else
  say "expected failure on schemas.rs@121de227 layout: $(grep -o 'error=[^ ]*[^E]*' "$WORK/live_121.log" | head -1 | tr -s ' ')"
fi
say "all stages passed"
