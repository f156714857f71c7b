#!/usr/bin/env bash
# New-process `searchengine sync -q` after one edit of a file, two versions of searchengine side by side
# (their Python interpreters), alternating which runs first each round. Each round adds a paragraph after the
# file's first <h1> (inside an HTML page's main text, which the extractor keeps; one appended before </body>
# lands in the footer it drops, and then nothing is embedded);
# each version syncs its own copy of the same index (the index must have been built from the folder holding
# FILE, e.g. by benchmarks/files/file_search.py --folder-only --whole). The file is restored at the end, both copies
# synced back, and each answers one query (printed, to compare the hits). Prints "round version wall user sys".
# Usage: benchmarks/files/sync_edit_ab.sh BEFORE_PYTHON AFTER_PYTHON INDEX FILE [ROUNDS]
#   e.g. benchmarks/files/sync_edit_ab.sh ../base/.venv/bin/python .venv/bin/python \
#        /tmp/filebench-whole/python-docs/folder-index-passage-headings \
#        /tmp/filebench-whole/python-docs/folder-files/library/tokenize.html 6
set -euo pipefail
before=$1 after=$2 index=$3 file=$4 rounds=${5:-6}
work=$(mktemp -d)
cp -p "$file" "$work/original"
cp -r "$index" "$work/before"
cp -r "$index" "$work/after"
trap 'cp -p "$work/original" "$file"; rm -rf "$work"' EXIT
cd "$work"  # not the checkout: `python -m searchengine` would import its searchengine/ whatever the interpreter
for round in $(seq 0 $((rounds - 1))); do
  sed -i "0,/<\/h1>/s##</h1><p>Round $round: a paragraph about tokens and the functions that generate them.</p>#" "$file"
  order="before after"; [ $((round % 2)) = 1 ] && order="after before"
  for version in $order; do
    python=$before; [ "$version" = after ] && python=$after
    /usr/bin/time -f "$round $version %e %U %S" "$python" -m searchengine sync -d "$work/$version" -q 2>&1 >/dev/null
  done
done
cp -p "$work/original" "$file"
for version in before after; do
  python=$before; [ "$version" = after ] && python=$after
  "$python" -m searchengine sync -d "$work/$version" -q >/dev/null
  echo "$version: $("$python" -m searchengine query "the functions that generate tokens" -d "$work/$version" -k 3 2>/dev/null | tr '\n' ' ')"
done
