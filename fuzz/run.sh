#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer and coverage instrumentation (the flags `cargo fuzz
# build --sanitizer none` passes, so neither cargo-fuzz nor nightly Rust is needed) and fuzzes a
# rotating subset of them for a bounded time, starting from the corpus kept in the repository
# (fuzz/corpus/<target>/, read only: new inputs go to a temporary folder). Prints libFuzzer's
# final figures per target (executions, exec/s, covered edges, corpus size) and fails on the
# first crash, hang or out-of-memory, leaving the input under $FUZZ_OUT/artifacts/.
#
# Usage: fuzz/run.sh [SECONDS_IN_ALL] (default 180)
#   FUZZ_SECONDS_EACH  seconds per target (default 30: 6 targets in 180 s)
#   FUZZ_TARGETS       the targets to run, space-separated (default: the rotating subset)
#   FUZZ_ROTATION      which subset (default: the day of the year, so every target runs within
#                      two days of CI)
#   FUZZ_OUT           where new inputs, artifacts and logs go (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")"
all=(md txt html csv docx pptx xlsx epub rtf doc pdf mcp)
budget="${1:-180}"
each="${FUZZ_SECONDS_EACH:-30}"
count=$((budget / each))
((count >= 1)) || count=1
((count <= ${#all[@]})) || count=${#all[@]}
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a chosen <<<"$FUZZ_TARGETS"
else
  rotation="${FUZZ_ROTATION:-$((10#$(date -u +%j)))}"
  chosen=()
  for ((i = 0; i < count; i++)); do
    chosen+=("${all[$(((rotation * count + i) % ${#all[@]}))]}")
  done
fi

host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="${CARGO_TARGET_DIR:-$PWD/../target}/fuzz"
# cargo-fuzz's instrumentation (SanitizerCoverage: 8-bit edge counters, the PC table, compare
# tracing) with debug assertions and overflow checks; `--target` keeps build scripts and proc
# macros uninstrumented.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
bins=()
features=(--no-default-features --features libfuzzer)
for t in "${chosen[@]}"; do
  bins+=(--bin "$t")
  # The index, tools and MCP server are built only for the `mcp` target.
  [ "$t" != mcp ] || features=()
done
echo "fuzz: building ${chosen[*]} ($target_dir)"
cargo build --quiet --release --manifest-path Cargo.toml --target "$host" \
  --target-dir "$target_dir" ${features[@]+"${features[@]}"} "${bins[@]}"

out="${FUZZ_OUT:-$(mktemp -d)}"
mkdir -p "$out/artifacts"
status=0
printf '%-6s %12s %8s %6s %6s %8s\n' target execs exec/s cov ft corpus
for t in "${chosen[@]}"; do
  mkdir -p "$out/new/$t"
  log="$out/$t.log"
  set +e
  "$target_dir/$host/release/$t" "$out/new/$t" "corpus/$t" \
    -max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" >"$log" 2>&1
  rc=$?
  set -e
  # The last status line: `#N DONE cov: C ft: F corp: U/Sb ... exec/s: E ...`.
  line="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$line")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$line")"
  corp="$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$line")"
  printf '%-6s %12s %8s %6s %6s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}"
  if [ "$rc" != 0 ]; then
    echo "fuzz: $t failed (exit $rc); its input is under $out/artifacts/; the log:" >&2
    tail -n 60 "$log" >&2
    status=1
    break
  fi
done
echo "fuzz: logs and new inputs in $out"
exit "$status"
