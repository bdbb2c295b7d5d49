#!/usr/bin/env bash
# Citation lint: tracked files must not cite files outside the repository (the old
# external figures file `../shared/...`, `shared/hardware.md`, absolute /work paths)
# nor issue numbers ("issue 3", "Issue #7"). Hardware figures are cited from
# docs/hardware.md (section, row); anything else is said in place. "issues 10 ns
# later" (an engine issuing an instruction) is not an issue number.
# Prints file:line:text for every hit and exits 1 if there is any. Extra arguments
# are git pathspecs added to the search (e.g. ':!configs/*.yaml' for a one-off run).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# docs/hardware.md lists the public pages behind the figures; this script holds the
# patterns themselves.
paths=(. ':!docs/hardware.md' ':!scripts/check_citations.sh' "$@")

outside='\.\./shared|shared/hardware\.md|(^|[^[:alnum:]_.-])/work/'
issue='(^|[^[:alnum:]_])[Ii]ssues? ?#?[0-9]'

hits="$(
  {
    git grep -n -I -E "$outside" -- "${paths[@]}" || true
    # Candidates, then drop "issues N ns" before matching again (awk has no lookahead).
    git grep -n -I -E "$issue" -- "${paths[@]}" | awk -v re="$issue" '{
      line = $0
      sub(/^[^:]*:[0-9]+:/, "", line)
      gsub(/[Ii]ssues [0-9]+ ns/, "", line)
      if (line ~ re) print
    }' || true
  } | sort -t: -k1,1 -k2,2n -u
)"

if [ -n "$hits" ]; then
  printf '%s\n' "$hits"
  echo "citations: $(printf '%s\n' "$hits" | wc -l) line(s) cite a file outside the repository" \
    "or an issue number; cite docs/hardware.md (section, row) or say the thing itself" >&2
  exit 1
fi
echo "citations: clean"
