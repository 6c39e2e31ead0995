#!/usr/bin/env bash
# Post the review as ONE pull-request comment, updating only this job's own earlier one (see
# comment.py). Python in isolated mode (-I): nothing of the pull request's checkout, the working
# directory, is importable. Needs GH_TOKEN, GITHUB_REPOSITORY, PR (the number) and
# EVALSPEC_COMMENT_FILE; GITHUB_API_URL when not api.github.com.
set -uo pipefail
exec "${PYTHON:-python3}" -I "$(dirname "${BASH_SOURCE[0]}")/comment.py"
