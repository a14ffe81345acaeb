#!/usr/bin/env bash
# Copies a few small files of each format from the shared corpus into fuzz/corpus-extra/<format>/
# (ignored by git) as more seeds for a long campaign (fuzz/corpus/ holds the small corpus CI uses).
# Usage: fuzz/seed.sh [MAX_BYTES_PER_FILE] (default 65536); LINKLY_SHARED_DIR overrides ../shared.
set -euo pipefail
cd "$(dirname "$0")"
shared="${LINKLY_SHARED_DIR:-../../shared}"
max="${1:-65536}"
for fmt in md txt html csv docx pptx xlsx epub rtf doc pdf; do
  mkdir -p "corpus-extra/$fmt"
  find "$shared/corpus/$fmt" -maxdepth 1 -type f -size -"$((max / 1024 + 1))"k -print0 \
    | sort -z | head -z -n 8 | xargs -0 -r cp -t "corpus-extra/$fmt/"
  # The edge cases of that format too (empty, truncated, mislabelled files).
  find "$shared/corpus/edge" -maxdepth 1 -type f -name "*.$fmt" -print0 \
    | xargs -0 -r cp -t "corpus-extra/$fmt/"
  echo "$fmt: $(ls "corpus-extra/$fmt" | wc -l) seeds"
done
