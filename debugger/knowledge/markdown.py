"""Reading and writing the Markdown-with-YAML-front-matter files the knowledge base is made of."""
from __future__ import annotations

import re

import yaml

FENCE_RE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


class MarkdownError(ValueError):
    """The file is not front matter plus Markdown (message: what is wrong, one line)."""


def split_front_matter(text: str) -> tuple[dict, str]:
    """Split `---\\nYAML\\n---\\nbody` into (mapping, body)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise MarkdownError("no YAML front matter (the file must start with a '---' line)")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            try:
                meta = yaml.safe_load("".join(lines[1:i]))
            except yaml.YAMLError as e:
                mark = getattr(e, "problem_mark", None)
                where = f" line {mark.line + 2}" if mark else ""
                raise MarkdownError(f"front matter is not valid YAML{where}: "
                                    f"{getattr(e, 'problem', None) or e}") from None
            if not isinstance(meta, dict):
                raise MarkdownError("front matter is not a YAML mapping")
            return meta, "".join(lines[i + 1:])
    raise MarkdownError("front matter is not closed by a '---' line")


def sections(body: str) -> dict[str, str]:
    """`## Title` sections of a body: title -> text (fenced code is not scanned for headings)."""
    out: dict[str, str] = {}
    current, buf, fence = None, [], None
    for line in body.splitlines(keepends=True):
        m = FENCE_RE.match(line.rstrip("\n"))
        if m:
            if fence is None:
                fence = m.group("fence")
            elif m.group("fence").startswith(fence) and not m.group("info").strip():
                fence = None
        if fence is None and line.startswith("## "):
            if current is not None:
                out[current] = "".join(buf).strip("\n")
            current, buf = line[3:].strip(), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        out[current] = "".join(buf).strip("\n")
    return out


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Fenced code blocks of `text` as (info string, code), in order."""
    blocks, fence, info, buf = [], None, "", []
    for line in text.splitlines(keepends=True):
        m = FENCE_RE.match(line.rstrip("\n"))
        if fence is None:
            if m:
                fence, info, buf = m.group("fence"), m.group("info").strip(), []
        elif m and m.group("fence").startswith(fence) and not m.group("info").strip():
            blocks.append((info, "".join(buf)))
            fence = None
        else:
            buf.append(line)
    return blocks


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks, so diffs and templates stay readable."""


def _str(dumper: yaml.SafeDumper, s: str):
    if "\n" in s:
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", s)


_Dumper.add_representer(str, _str)


def dump_front_matter(meta: dict) -> str:
    """`---\\nYAML\\n---\\n` for a mapping, keys in the given order."""
    text = yaml.dump(meta, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{text}---\n"


def fence(info: str, code: str) -> str:
    """A fenced block whose fence is longer than any backtick run inside `code`."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{code.rstrip()}\n{ticks}\n"
