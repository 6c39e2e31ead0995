#!/usr/bin/env bash
# The review step of the evalspec GitHub Action (action.yml), runnable anywhere:
#
#   EVALSPEC_BASE_REF=origin/main bash action/review.sh
#
# Runs `evalspec review` on the suites of the current repository against EVALSPEC_BASE_REF,
# writes the pull-request comment to EVALSPEC_COMMENT_FILE and the exit code to GITHUB_OUTPUT
# (`exit-code=N`), and appends the comment to the job summary. It always exits 0 when the
# review ran, so the comment can be posted before the gate step fails the job.
#
# Environment: EVALSPEC_BASE_REF (required; a ref or commit id), EVALSPEC_SUITES (globs,
# space-separated, default suites/*.yaml), EVALSPEC_ALLOW_STALE (true|false), EVALSPEC_PLUGINS
# (installed plugins review may load, space-separated; default none),
# EVALSPEC_COMMENT_FILE (default $RUNNER_TEMP/evalspec-review.md), EVALSPEC_FULL_REVIEW_FILE (the
# whole review when the comment had to be shortened; default the comment's name + -full.md).
set -uo pipefail

base="${EVALSPEC_BASE_REF:?set EVALSPEC_BASE_REF to the base branch or commit}"
comment="${EVALSPEC_COMMENT_FILE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/evalspec-review.md}"

# A ref name reaches git only after this check, and never in a position git reads options from.
if [[ ! "$base" =~ ^[A-Za-z0-9][A-Za-z0-9._/-]*$ ]] || [[ "$base" == *..* ]]; then
  echo "::error::evalspec: base ref '$base' is not a plain ref name or commit id" >&2
  exit 2
fi
if ! git rev-parse --verify --quiet --end-of-options "$base^{commit}" > /dev/null; then
  # Shallow checkouts lack the base: fetch just that commit or branch.
  git fetch --no-tags --depth=1 origin "$base" > /dev/null 2>&1 || true
  if ! git rev-parse --verify --quiet --end-of-options "$base^{commit}" > /dev/null; then
    base=FETCH_HEAD
  fi
fi

full="${EVALSPEC_FULL_REVIEW_FILE:-${comment%.md}-full.md}"
args=(review --base-ref "$base" --markdown "$comment" --full-markdown "$full")
if [[ "${EVALSPEC_ALLOW_STALE:-false}" == "true" ]]; then args+=(--allow-stale); fi
read -r -a plugins <<< "${EVALSPEC_PLUGINS:-}"
for name in "${plugins[@]}"; do args+=(--plugin "$name"); done
set -f  # globs are evalspec's to expand, relative to the repository
read -r -a suites <<< "${EVALSPEC_SUITES:-suites/*.yaml}"
set +f

code=0
evalspec "${args[@]}" -- "${suites[@]}" || code=$?
echo "exit-code=$code" >> "${GITHUB_OUTPUT:-/dev/null}"
if [[ -s "$comment" ]]; then
  cat "$comment" >> "${GITHUB_STEP_SUMMARY:-/dev/null}"
fi
if [[ "$code" -eq 2 || ! -s "$comment" ]]; then
  echo "::error::evalspec review could not run (exit $code); see the messages above" >&2
  exit "$code"
fi
exit 0
