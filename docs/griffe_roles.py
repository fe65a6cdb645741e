"""A griffe extension for the API reference site (``mkdocs.yml``): the docstrings' bits of
reStructuredText, as Markdown.

The docstrings are prose with Google-style sections and reStructuredText inline markup. Before
mkdocstrings renders them, this rewrites

* the roles ``:func:`x```, ``:class:`x```, ``:meth:`x```, ... as the code ``x`` linked to x's
  reference, an *optional* cross-reference (mkdocs-autorefs): a name that is documented
  nowhere on the site (a private helper, a numpy function) stays plain code and is no error,
  unlike a cross-reference written in Markdown. ``x`` is looked up where the docstring
  stands, as Python would (members, imports, then the enclosing scopes); ``~a.b.c`` shows
  ``c``;
* a paragraph ending in ``::`` (a literal block follows, indented, hence Markdown code) as one
  ending in ``:``;
* a paragraph of ``>>>`` lines (a doctest) as a fenced Python console block;
* a definition list (a term, unindented, directly above its indented definition, as in
  ``dragons_egg_v0``'s docstring) as the term in bold above the definition, dedented: in
  Markdown, an indented paragraph after a blank line would be code.

The source files are not changed; only the site shows the result.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|mod|obj|exc|const):`(?P<target>[^`]+)`")
LITERAL_INTRO = re.compile(r"(?m)(?<=\S)::[ \t]*$")
BARE_LITERAL_INTRO = re.compile(r"(?m)^[ \t]*::[ \t]*\n")
# A definition list's term: unindented, not a list item, not a section title ("Args:").
TERM = re.compile(r"^(?![-*+] |\d+[.)] )\S.*[^:\s]\s*$")
INDENT = "    "


def _identifier(obj: griffe.Object, target: str) -> str:
    """The full path of ``target`` as seen from ``obj``'s docstring (``target`` itself when it
    cannot be resolved: the optional reference then shows plain code)."""
    first, dot, rest = target.partition(".")
    try:
        return obj.resolve(first) + dot + rest  # looks in obj, then its parents
    except griffe.NameResolutionError:
        return target


def _role(obj: griffe.Object, match: re.Match[str]) -> str:
    target = match["target"].strip()
    short = target.startswith("~")
    target = target.lstrip("~.")
    shown = target.rsplit(".", 1)[-1] if short else target
    ident = html.escape(_identifier(obj, target), quote=True)
    return f'<autoref identifier="{ident}" optional><code>{html.escape(shown)}</code></autoref>'


def _doctests(text: str) -> str:
    """Fence each paragraph whose lines all start with ``>>>`` or ``...``."""
    out = []
    for para in re.split(r"(\n[ \t]*\n)", text):
        lines = para.strip("\n").splitlines()
        if lines and lines[0].lstrip().startswith(">>>") and all(
                ln.lstrip().startswith((">>>", "...")) for ln in lines):
            indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
            para = f"{indent}```pycon\n{para.strip(chr(10))}\n{indent}```"
        out.append(para)
    return "".join(out)


def _definitions(text: str) -> str:
    """Each definition list item as its term in bold, then its definition dedented."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if TERM.match(line) and (not out or not out[-1].strip()) and nxt.startswith(INDENT) \
                and nxt.strip():
            out += [f"**{line.strip()}**", ""]
            i += 1
            while i < len(lines) and (lines[i].startswith(INDENT) or not lines[i].strip()):
                out.append(lines[i][len(INDENT):])
                i += 1
            while out and not out[-1].strip():  # blank lines stay after the definition
                out.pop()
                i -= 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text``, a docstring of ``obj``, as Markdown (see the module docstring)."""
    text = _definitions(text)
    text = ROLE.sub(lambda m: _role(obj, m), text)
    text = BARE_LITERAL_INTRO.sub("", text)
    text = LITERAL_INTRO.sub(":", text)
    return _doctests(text)


class SphinxRoles(griffe.Extension):
    """Rewrite the docstrings of every loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj, obj.docstring.value)
        for member in obj.members.values():
            if isinstance(member, griffe.Object):  # not an Alias (an import)
                self._walk(member, seen)
