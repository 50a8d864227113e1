#!/usr/bin/env bash
# The int8 TFLite interpreter's flash without model data
# (scripts/tflite-size.sh, thumbv8m.main-none-eabihf, workspace release
# profile) against issue 11's budget of 24 KB (24,576 B).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
budget=24576
line="$("$root/scripts/tflite-size.sh" | tail -n 1)"
echo "$line"
flash="$(sed -n 's/.*flash \([0-9]*\) B.*/\1/p' <<<"$line")"
[ -n "$flash" ] || { echo "check-tflite-size: no size in '$line'" >&2; exit 1; }
if [ "$flash" -gt "$budget" ]; then
    echo "check-tflite-size: $flash B is over the $budget B budget" >&2
    exit 1
fi
echo "check-tflite-size: $flash B of $budget B"
