#!/usr/bin/env bash
# Replaces the lines between "<!-- NAME:begin -->" and "<!-- NAME:end -->"
# in FILE with the contents of SRC.
#
#   usage: scripts/replace-section.sh FILE NAME SRC
set -euo pipefail
file=$1 name=$2 src=$3
grep -q "<!-- $name:begin -->" "$file" || { echo "$file: no <!-- $name:begin --> marker" >&2; exit 1; }
awk -v name="$name" -v src="$src" '
  $0 == "<!-- " name ":begin -->" { print; while ((getline line < src) > 0) print line; skip = 1; next }
  $0 == "<!-- " name ":end -->"   { skip = 0 }
  !skip { print }
' "$file" > "$file.tmp"
mv "$file.tmp" "$file"
