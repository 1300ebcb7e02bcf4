#!/usr/bin/env bash
# Checks that every Go file of the repository carries the licence header of
# hack/boilerplate.go.txt, after its build constraint if it has one.
# With --fix, adds the header where it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

header=hack/boilerplate.go.txt
header_lines=$(wc -l <"$header")
fix=false
[[ "${1:-}" == "--fix" ]] && fix=true

is_constrained() { [[ "$(sed -n 1p "$1")" == //go:build* ]]; }

# The header starts at line 1, or after a "//go:build" line and a blank line.
has_header() {
	local file=$1 start=1
	if is_constrained "$file"; then start=3; fi
	sed -n "${start},$((start + header_lines - 1))p" "$file" | cmp -s - "$header"
}

add_header() {
	local file=$1 tmp
	tmp=$(mktemp)
	if is_constrained "$file"; then
		{ head -n1 "$file"; echo; cat "$header"; echo; tail -n +2 "$file" | sed '1{/^$/d}'; } >"$tmp"
	else
		{ cat "$header"; echo; cat "$file"; } >"$tmp"
	fi
	cat "$tmp" >"$file"
	rm -f "$tmp"
}

missing=()
while IFS= read -r file; do
	has_header "$file" && continue
	if $fix; then add_header "$file"; else missing+=("$file"); fi
done < <(git ls-files --cached --others --exclude-standard '*.go')

if ((${#missing[@]})); then
	printf '%s\n' "${missing[@]}"
	echo "these Go files lack the licence header of $header: run hack/verify-boilerplate.sh --fix"
	exit 1
fi
