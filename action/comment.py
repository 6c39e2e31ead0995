"""Post the review as ONE pull-request comment: update this job's own earlier comment, else create.

Run as `python -I action/comment.py` (isolated: the pull request's checkout, the working
directory, is not on `sys.path`); only the standard library. Environment: GH_TOKEN,
GITHUB_REPOSITORY (owner/name), PR (the number), EVALSPEC_COMMENT_FILE, and GITHUB_API_URL
(default https://api.github.com; GitHub sets it). EVALSPEC_COMMENT_AUTHOR names the account
the token posts as, when it is neither the token's user nor `github-actions[bot]`.

Only a comment that starts with the marker AND was written by the token's own account is
updated: a pull request's author can write the marker too, and must not receive the verdict
in place of the bot's. The token never follows a redirect and never goes over plain http to
another host. Fork pull requests get a read-only token: then this warns, and the job summary
still holds the comment. Exit 0 either way, 2 for bad settings.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

MARKER = "<!-- evalspec-review -->"
ACTIONS_BOT = "github-actions[bot]"
"""Who posts with the workflow's GITHUB_TOKEN (which cannot read GET /user)."""
PER_PAGE = 100
MAX_PAGES = 100
TIMEOUT_S = 30


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is then an HTTPError: the token goes nowhere else


class GitHub:
    def __init__(self, api: str, token: str) -> None:
        self.api = api.rstrip("/")
        self.token = token
        self._opener = urllib.request.build_opener(_NoRedirect)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(f"{self.api}/{path}", data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with self._opener.open(request, timeout=TIMEOUT_S) as response:
            text = response.read().decode("utf-8")
        return json.loads(text) if text else None


def _plain_http_elsewhere(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return False
    host = parts.hostname or ""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def own_login(gh: GitHub) -> str:
    """The account this token posts as."""
    named = os.environ.get("EVALSPEC_COMMENT_AUTHOR", "").strip()
    if named:
        return named
    try:
        user = gh.call("GET", "user")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403, 404):  # an Actions or App token: GET /user is not for it
            return ACTIONS_BOT
        raise
    return str(user["login"])


def own_comment(gh: GitHub, repo: str, pr: str, login: str) -> int | None:
    """The id of the first comment of `login` that starts with the marker."""
    for page in range(1, MAX_PAGES + 1):
        comments = gh.call(
            "GET", f"repos/{repo}/issues/{pr}/comments?per_page={PER_PAGE}&page={page}"
        )
        for c in comments:
            author = (c.get("user") or {}).get("login")
            if author == login and str(c.get("body") or "").startswith(MARKER):
                return int(c["id"])
        if len(comments) < PER_PAGE:
            return None
    return None


def main() -> int:
    env = os.environ
    try:
        token, repo, pr, file = (
            env[k] for k in ("GH_TOKEN", "GITHUB_REPOSITORY", "PR", "EVALSPEC_COMMENT_FILE")
        )
    except KeyError as missing:
        print(f"::error::evalspec comment: {missing.args[0]} is not set", file=sys.stderr)
        return 2
    api = env.get("GITHUB_API_URL") or "https://api.github.com"
    if not pr.isdigit():
        print("::error::PR must be a number", file=sys.stderr)
        return 2
    if repo.count("/") != 1 or not all(
        part and part not in (".", "..") for part in repo.split("/")
    ):
        print("::error::GITHUB_REPOSITORY must be owner/name", file=sys.stderr)
        return 2
    if _plain_http_elsewhere(api):
        print(
            f"::error::GITHUB_API_URL {api} is plain http to another host: "
            "the token would travel unencrypted",
            file=sys.stderr,
        )
        return 2
    with open(file, encoding="utf-8") as f:
        body = f.read()
    gh = GitHub(api, token)
    try:
        existing = own_comment(gh, repo, pr, own_login(gh))
        if existing is not None:
            gh.call("PATCH", f"repos/{repo}/issues/comments/{existing}", {"body": body})
        else:
            gh.call("POST", f"repos/{repo}/issues/{pr}/comments", {"body": body})
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError) as exc:
        reason = getattr(exc, "code", None) or type(exc).__name__
        print(
            f"::warning::evalspec: could not post the comment ({reason}; read-only token?); "
            "see the job summary"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
