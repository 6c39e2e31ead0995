"""An example MCP server with two versions of its tool descriptions, for comparing them.

A support desk's two search tools: one over the product documentation, one over customers'
tickets. In version 1 both say only "Search by keywords.", so a model cannot tell them apart;
version 2 says what each searches and what it is not for. suites/search.yaml runs every case
against both versions (`variants:`) and reports which descriptions models use better.

    python examples/mcp_search_server.py                      # version 1, over stdio
    python examples/mcp_search_server.py --descriptions v2    # version 2
    python examples/mcp_search_server.py --http 8000          # streamable HTTP on 127.0.0.1
"""

from __future__ import annotations

import argparse

from mcp_calc_server import MCPServer, serve_http

DESCRIPTIONS = {
    "v1": {
        "Docs.Search": "Search by keywords.",
        "Tickets.Search": "Search by keywords.",
    },
    "v2": {
        "Docs.Search": (
            "Search the product documentation (how-to pages, reference, release notes) by "
            "keywords. Not for customers' tickets."
        ),
        "Tickets.Search": (
            "Search customers' support tickets (problems they reported, with their status) by "
            "keywords. Not for the documentation."
        ),
    },
}

DOCS = {
    "reset password": "How-to: reset a password from Settings > Account > Reset.",
    "export csv": "How-to: export a report as CSV from Reports > Export.",
    "sso": "Reference: single sign-on with SAML 2.0 or OIDC, on the Business plan.",
}
TICKETS = {
    "login": "T-104 (open): customer cannot log in after the 2.3 update.",
    "invoice": "T-221 (closed): invoice sent twice in March, refunded.",
    "export": "T-317 (open): CSV export times out on large reports.",
}


def _search(index: dict[str, str], query: str) -> list[str]:
    words = set(query.lower().split())
    return [text for key, text in index.items() if words & set(key.split())]


def make_server(version: str) -> MCPServer:
    """The server with the tool descriptions of `version` (v1 or v2)."""
    server = MCPServer("search")
    said = DESCRIPTIONS[version]

    @server.tool(name="Docs.Search", description=said["Docs.Search"])
    def search_docs(query: str) -> list[str]:
        return _search(DOCS, query)

    @server.tool(name="Tickets.Search", description=said["Tickets.Search"])
    def search_tickets(query: str) -> list[str]:
        return _search(TICKETS, query)

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--descriptions", choices=sorted(DESCRIPTIONS), default="v1")
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    app = make_server(args.descriptions)
    if args.http:
        serve_http(app, args.http)
    else:
        app.run()
