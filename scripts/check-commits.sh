#!/usr/bin/env bash
# Commit subjects: at most 72 characters, never empty (CONTRIBUTING.md, "Commits"). Checked
# for every commit after the last one written before the convention was enforced; history
# before it is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest commit whose subject predates the check (75 characters).
base=f295b331277ed0feb1342c8bb8c158848fd2cffc
limit=72

if ! git rev-parse -q --verify "$base^{commit}" >/dev/null 2>&1; then
    echo "note: $base is not in this clone (shallow?): commit subjects not checked"
    exit 0
fi
bad=0
while IFS= read -r line; do
    hash=${line%% *}
    subject=${line#* }
    if [[ $hash == "$line" ]]; then subject=""; fi
    if ((${#subject} == 0 || ${#subject} > limit)); then
        echo "error: commit $hash: subject of ${#subject} characters (1 to $limit): $subject" >&2
        bad=1
    fi
done < <(git log --no-merges --format='%h %s' "$base..HEAD")
if ((bad)); then
    exit 1
fi
echo "commit subjects after ${base:0:7}: all within $limit characters"
