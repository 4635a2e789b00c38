"""`kdebug mcp`: serve kdebug's tools over the Model Context Protocol (stdio, or streamable HTTP)."""
from __future__ import annotations


def register(sub, case_args) -> None:
    p = sub.add_parser("mcp", help="serve the tools over the Model Context Protocol (stdio by default)")
    p.add_argument("--http", type=int, metavar="PORT",
                   help="serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger import extras

    extras.require("mcp", "kdebug mcp")
    from debugger.mcp_server import serve
    from debugger.output import log

    if args.http is not None:
        if not 0 < args.http < 65536:
            from debugger.errors import InvalidInput
            raise InvalidInput(f"--http {args.http}: not a port number")
        log(f"kdebug mcp: streamable HTTP on http://127.0.0.1:{args.http}/mcp")
    serve(http_port=args.http)
    return 0
