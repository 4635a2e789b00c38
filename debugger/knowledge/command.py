"""`kdebug kb search|stats|add|promote|reindex|lint`: the knowledge base from the command line."""
from __future__ import annotations

from debugger.output import log, print_json


def register(sub, case_args) -> None:
    kb = sub.add_parser("kb", help="the knowledge base: failure patterns and reference kernels")
    kbs = kb.add_subparsers(dest="kb_command", required=True)
    p = kbs.add_parser("search", help="retrieve patterns and reference kernels")
    p.add_argument("query", nargs="?", help="free text: a symptom, an error, an operator")
    p.add_argument("--symptom", action="append", dest="symptoms", help="a symptom tag (repeatable)")
    p.add_argument("--bug-class", help="filter by bug class")
    p.add_argument("--operator", help="boost an operator")
    p.add_argument("--code", help="a kernel file whose code to match")
    p.add_argument("--kind", choices=["pattern", "reference_kernel"])
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=search)
    for name, fn, help_ in (("stats", stats, "counts by class, status and category"),
                            ("reindex", reindex, "bring the index up to date with the files"),
                            ("lint", lint, "validate every pattern and reference kernel")):
        q = kbs.add_parser(name, help=help_)
        q.add_argument("--json", action="store_true")
        q.set_defaults(func=fn)
    a = kbs.add_parser("add", help="add a pattern file or a reference-kernel folder to your layer of the "
                                   "knowledge base, under the data folder (never overwrites)")
    a.add_argument("path")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=add)
    pr = kbs.add_parser("promote", help="copy a learned pattern (or an ingest draft) into a checkout's kb/ "
                                        "for review (never overwrites)")
    pr.add_argument("id", help="the pattern id (learned-..., draft-...)")
    pr.add_argument("--to", metavar="DIR", help="the checkout's knowledge-base folder, the one holding "
                                                "patterns/ (default: the curated kb, when it is a checkout's)")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=promote)


def _kb():
    from debugger.knowledge import KnowledgeBase

    return KnowledgeBase()


def search(args) -> int:
    from pathlib import Path

    code = None
    if args.code:
        path = Path(args.code)
        if not path.is_file():
            from debugger.errors import InvalidInput
            raise InvalidInput(f"--code file not found: {path}")
        code = path.read_text()
    if not (args.query or args.symptoms or args.bug_class or args.operator or code):
        from debugger.errors import InvalidInput
        raise InvalidInput("give a QUERY or at least one of --symptom, --bug-class, --operator, --code")
    hits = _kb().search(args.query, symptoms=args.symptoms, bug_class=args.bug_class, operator=args.operator,
                        code=code, kind=args.kind, k=args.k)
    if args.json:
        print_json({"query": args.query, "hits": [h.to_dict() for h in hits]})
    else:
        for h in hits:
            print(f"{h.score:5.2f}  {h.kind:<16} {h.id:<44} {h.bug_class or '-':<26} {h.fix_recipe or ''}")
    return 0


def stats(args) -> int:
    s = _kb().stats()
    if args.json:
        print_json(s)
    else:
        print(f"patterns: {s['patterns']}  reference kernels: {s['reference_kernels']}  learned: {s['learned']}")
        print(f"curated (read-only): {s['curated_dir']}\nlearned and added: {s['user_dir']}")
        for cls, n in sorted(s.get("by_class", {}).items()):
            print(f"  {cls:<28} {n}")
    return 0


def reindex(args) -> int:
    r = _kb().reindex()
    if args.json:
        print_json(r)
    else:
        print(", ".join(f"{k}: {v if not isinstance(v, list) else len(v)}" for k, v in r.items()))
        for p in r.get("problems", []):
            log(f"problem: {p}")
    return 0


def lint(args) -> int:
    problems = _kb().lint()
    if args.json:
        print_json({"problems": problems, "ok": not problems})
    else:
        for p in problems:
            print(p)
        print("ok" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def add(args) -> int:
    r = _kb().add(args.path)
    if args.json:
        print_json(r)
    else:
        print(f"{r['action']} {r['kind']} {r['id']} -> {r['path']}")
    return 0


def promote(args) -> int:
    r = _kb().promote(args.id, args.to)
    if args.json:
        print_json(r)
    else:
        print(f"promoted {r['id']} ({r['status']}) -> {r['path']}")
    return 0
