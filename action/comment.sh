#!/usr/bin/env bash
# Post the review as ONE pull-request comment: update the comment that starts with the review
# marker if there is one, else create it. Needs GH_TOKEN, GITHUB_REPOSITORY, PR (the number)
# and EVALSPEC_COMMENT_FILE. Fork pull requests get a read-only token: then this warns, and the
# job summary still holds the comment.
set -uo pipefail

marker='<!-- evalspec-review -->'
file="${EVALSPEC_COMMENT_FILE:?}"
repo="${GITHUB_REPOSITORY:?}"
pr="${PR:?}"
[[ "$pr" =~ ^[0-9]+$ ]] || { echo "::error::PR must be a number" >&2; exit 2; }

id=$(gh api --paginate "repos/$repo/issues/$pr/comments" \
  --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)
if [[ -n "$id" ]]; then
  gh api -X PATCH "repos/$repo/issues/comments/$id" -F "body=@$file" > /dev/null
else
  gh api -X POST "repos/$repo/issues/$pr/comments" -F "body=@$file" > /dev/null
fi || echo "::warning::evalspec: could not post the comment (read-only token?); see the job summary"
