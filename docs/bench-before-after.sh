#!/usr/bin/env bash
# Bench figures before and after a change, interleaved (before, after, before, after) so that a
# busy machine's load falls on both alike. See docs/architecture-metrics.md for the figures.
#
# Usage: docs/bench-before-after.sh OUT_DIR BIN_BEFORE BIN_AFTER
# Inputs (environment): KEYWORD_DIRS (folders indexed keyword-only, space-separated),
# EMBED_DIR (folder indexed with the model), QUERIES (a file, one query a line),
# LINKLY_TEST_MODEL_DIR (the model folder), ROUNDS (default 2).
set -euo pipefail
out=$1
declare -A bin=([before]=$2 [after]=$3)
rounds=${ROUNDS:-2}
mkdir -p "$out"
uptime >"$out/load.txt"
# Read every input once, so that the first run does not pay the disk for the others.
find $KEYWORD_DIRS "$EMBED_DIR" -type f -exec cat {} + >/dev/null

for round in $(seq 1 "$rounds"); do
  for side in before after; do
    b=${bin[$side]}
    # Keyword-only: no LINKLY_MODEL_DIR and a fresh data directory, so no model is attached.
    home=$out/kw-$side-$round
    rm -rf "$home"
    env -u LINKLY_MODEL_DIR /usr/bin/time -v "$b" --home "$home" index $KEYWORD_DIRS \
      >"$out/kw-$side-$round.out" 2>"$out/kw-$side-$round.time"
    uptime >>"$out/load.txt"
    # With embeddings: the same command with the test model.
    home=$out/emb-$side-$round
    rm -rf "$home"
    LINKLY_MODEL_DIR=$LINKLY_TEST_MODEL_DIR /usr/bin/time -v "$b" --home "$home" index "$EMBED_DIR" \
      >"$out/emb-$side-$round.out" 2>"$out/emb-$side-$round.time"
    uptime >>"$out/load.txt"
  done
done

# Hybrid latency: each binary on the index it built in the last round, one CLI process a query,
# the two binaries alternating query by query.
: >"$out/search-before.ms"
: >"$out/search-after.ms"
while IFS= read -r q; do
  for side in before after; do
    t0=$(date +%s%N)
    LINKLY_MODEL_DIR=$LINKLY_TEST_MODEL_DIR "${bin[$side]}" --json --home "$out/emb-$side-$rounds" \
      search "$q" --limit 10 >"$out/search-$side.last.json"
    t1=$(date +%s%N)
    grep -q '"mode": *"hybrid"' "$out/search-$side.last.json" || {
      echo "not hybrid: $side $q" >&2
      exit 1
    }
    echo $(((t1 - t0) / 1000000)) >>"$out/search-$side.ms"
  done
done <"$QUERIES"
uptime >>"$out/load.txt"
