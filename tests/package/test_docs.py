"""The README and the docs site: every Python and shell example runs, the pages speak of the
product only, and the version is one version everywhere.

A fenced block is run when its language is ``python`` or ``bash``; the blocks of a page run in
order in one scratch folder holding a copy of ``examples/``. An HTML comment on the line before a
block changes that: ``<!-- not-run: REASON -->`` skips it (kept few, each with its reason), and
``<!-- setup: django -->`` runs it in a configured Django project. A block that names a server
(``postgresql+psycopg://user@host/dbname``, ``mysql+pymysql://user@host/dbname``) runs with the
page's other blocks for that server, in a folder of their own, against a fresh database on the
test server: a page's SQLite examples run where no server is set, and its server examples fail in
CI (``SIMSTORE_REQUIRE_SERVERS=1``) when the server is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import HANG, new_server_database, unavailable

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
RUN = {"python", "bash"}
KNOWN = RUN | {"text", "sql"}
MAX_NOT_RUN = 5
PLACEHOLDERS = {
    "postgresql": ("postgresql+psycopg://user@host/dbname", "postgresql://user@host/dbname"),
    "mysql": ("mysql+pymysql://user@host/dbname",),
}
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.M | re.S)
_DIRECTIVE = re.compile(r"<!-- (not-run|setup|quickstart):\s*(.*?)\s*-->\s*$")
DJANGO_SETUP = """
import django
from django.conf import settings
settings.configure(
    SECRET_KEY="docs", USE_TZ=True,
    INSTALLED_APPS=["django.contrib.contenttypes", "simstore.contrib.django"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "django.db"}},
    SIMSTORE={"NAMESPACE": "comments", "KEEP": "2d"},
)
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
"""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    directive: str | None
    argument: str


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        found.append(
            Block(
                str(path.relative_to(ROOT)),
                line,
                match.group(1),
                match.group(2),
                directive.group(1) if directive else None,
                directive.group(2) if directive else "",
            )
        )
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def test_every_block_says_its_language() -> None:
    unknown = [
        f"{b.page}:{b.line} ({b.language or 'none'})" for b in ALL if b.language not in KNOWN
    ]
    assert not unknown, f"fenced blocks need one of {sorted(KNOWN)}: {unknown}"


def test_blocks_not_run_are_few_and_say_why() -> None:
    skipped = [b for b in ALL if b.directive == "not-run"]
    assert all(b.argument for b in skipped), "a not-run block must give its reason"
    assert all(b.language in RUN for b in skipped), "only runnable blocks need a not-run note"
    assert len(skipped) <= MAX_NOT_RUN, [f"{b.page}:{b.line}" for b in skipped]
    quickstart = [b for b in ALL if b.directive == "quickstart"]
    assert [b.argument for b in quickstart] == ["main", "test"]  # .ci/run runs these verbatim


def _servers(code: str) -> list[str]:
    return [kind for kind, names in PLACEHOLDERS.items() if any(n in code for n in names)]


def _run(block: Block, folder: Path, env: dict[str, str], urls: dict[str, str]) -> None:
    code = block.code
    for kind, url in urls.items():
        for placeholder in PLACEHOLDERS[kind]:
            plain = url.replace("+psycopg", "") if "+" not in placeholder else url
            code = code.replace(placeholder, plain)
    if block.language == "python":
        prelude = DJANGO_SETUP if block.argument == "django" else ""
        script = folder / "_block.py"
        script.write_text(prelude + code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=HANG, check=False
    )
    assert done.returncode == 0, (
        f"{block.page}:{block.line} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )


def _part(block: Block) -> str:
    """Which run a block belongs to: ``sqlite``, or the servers it names (``postgresql``...)."""
    return "+".join(_servers(block.code)) or "sqlite"


RUN_CASES = sorted({(b.page, _part(b)) for b in ALL if b.language in RUN and b.directive is None})


@pytest.mark.slow  # each page's examples run as shell scripts, a few start Spark
@pytest.mark.parametrize(("page", "part"), RUN_CASES, ids=[f"{p}-{k}" for p, k in RUN_CASES])
def test_the_page_examples_run(page: str, part: str, tmp_path: Path) -> None:
    mine = [b for b in ALL if b.page == page and _part(b) == part]
    runnable = [b for b in mine if b.language in RUN and b.directive is None]
    runnable += [b for b in mine if b.directive == "setup"]
    runnable.sort(key=lambda b: b.line)
    if any("pyspark" in b.code or "spark dedup" in b.code for b in runnable):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            unavailable("the spark extra is not installed", needed="PySpark")
    urls = {kind: new_server_database(kind) for kind in _servers("".join(b.code for b in mine))}
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYSPARK_PYTHON"] = sys.executable
    for block in runnable:
        _run(block, tmp_path, env, urls)


# -- the pages speak of the product ------------------------------------------------------------

PROCESS_WORDS = [
    r"\bsessions?\b(?! ?(?:settings|variables?|\(jit))",
    r"\bstops? \d+",
    r"\bissues? \d+",
    r"\bissue's\b",
    r"\btried and (?:dropped|not shipped)",
    r"\bwas tried\b",
    r"\bnot shipped\b",
    r"\bpredates\b",
    r"\bthis (?:release|session)\b",
    r"\bthe previous commit\b",
    r"\bseeds?\b(?:'s)? \d{3}",
    r"\bat commit\b",
    r"\btune half\b",  # say what it is: the half of the dataset the defaults were chosen on
    r"\bmoved with the machine\b",
    r"\bthe code before\b",
]
_HASH = re.compile(r"(?<![\w/.-])[0-9a-f]{7,12}(?![\w/.-])|(?<![\w/.-])[0-9a-f]{40}(?![\w/.-])")


def _prose(path: Path) -> str:
    """The page without its code blocks and inline code (hashes in examples are fingerprints)."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return re.sub(r"`[^`\n]*`", "", text)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_speaks_of_the_product_only(path: Path) -> None:
    prose = _prose(path)
    found = [m.group(0) for word in PROCESS_WORDS for m in re.finditer(word, prose, re.I)]
    hashes = [h for h in _HASH.findall(prose) if re.search(r"\d", h) and re.search(r"[a-f]", h)]
    assert not found and not hashes, f"development history in {path.name}: {found + hashes}"


def test_the_process_words_test_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Since stop 27 (commit 1b7c7d3), what was tried and dropped.\n")
    prose = _prose(page)
    assert any(re.search(word, prose, re.I) for word in PROCESS_WORDS)
    assert _HASH.findall(prose) == ["1b7c7d3"]


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


# -- what a reader sees ------------------------------------------------------------------------


def test_no_table_shows_an_escaped_pipe() -> None:
    """Python-Markdown keeps the backslash of ``\\|`` inside code in a table: the page would show
    it. A cell names alternatives in words instead."""
    found = [
        f"{path.name}:{number}"
        for path in PAGES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.lstrip().startswith("|") and "\\|" in line
    ]
    assert not found, found


def test_every_picture_exists_and_the_front_page_shows_none_of_itself() -> None:
    pictures = [
        (path, name)
        for path in (ROOT / "docs").glob("*.md")
        for name in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", path.read_text(encoding="utf-8"))
    ]
    assert pictures, "the pages show the report and the peers' plot"
    assert all((path.parent / name).is_file() for path, name in pictures), pictures
    assert not [name for path, name in pictures if path.name == "index.md"]


_SAID = re.compile(r"\b(\w+) (?:`simstore_\*` tables|tables, all prefixed `simstore_`)")
_COUNTS = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def test_the_pages_count_and_name_the_tables_the_schema_makes() -> None:
    from simstore.storage.migrate import VERSION_TABLE
    from simstore.storage.schema import metadata

    tables = {*metadata.tables, VERSION_TABLE}
    for path in (ROOT / "README.md", ROOT / "docs" / "sql.md"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        said = _SAID.findall(text)
        assert said and all(_COUNTS.get(word) == len(tables) for word in said), (path.name, said)
        assert tables <= set(re.findall(r"`(simstore_[a-z_]+)`", text)), path.name


def test_the_quick_start_shows_no_rate_of_one_machine() -> None:
    for path in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        assert not re.search(r"\d records/s", path.read_text(encoding="utf-8")), path.name


def _summary_sample(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    after = text[text.index("It prints a summary like this") :]
    return after.split("```text\n", 1)[1].split("```", 1)[0].splitlines()


@pytest.mark.slow  # ingests the sample corpus
def test_the_quick_start_summary_is_what_ingest_prints(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "simstore.cli", "ingest", "examples/corpus.jsonl"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[-1].startswith("rate ")  # shown in words: it depends on the machine
    for path in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        assert _summary_sample(path) == printed[:-1], path.name


_POLICY_LINE = re.compile(r"^[a-z][a-z ]*?\s{2,}(minhash \(.*\))$", re.M)


def test_every_policy_line_shown_has_the_default_policys_clauses() -> None:
    """A printed policy line (ingest's summary, whatif, db status) shows what the default is made
    of today: the same clauses in the same order, numbers aside (whatif shows changed ones). The
    reference is ``describe`` of the default policy itself."""
    from simstore.policy.policies import DEFAULT_POLICY

    def shape(line: str) -> str:
        return re.sub(r"\d+(?:\.\d+)?", "N", line)

    default = shape(DEFAULT_POLICY.describe(3))
    shown = [
        (path.name, match.group(1))
        for path in PAGES
        for match in _POLICY_LINE.finditer(path.read_text(encoding="utf-8"))
    ]
    assert len(shown) >= 3  # the README, getting started and the whatif example
    assert [(name, shape(line)) for name, line in shown] == [(name, default) for name, _ in shown]


def test_no_page_narrates_dated_result_files() -> None:
    """Figures come with the command that reproduces them; the result files and their days are
    in benchmarks/results (INDEX.md, history.md)."""
    dated = re.compile(r"\d{4}-\d{2}-\d{2}\.(?:json|log|txt|png)\b")
    found = [f"{p.name}: {m}" for p in PAGES for m in dated.findall(p.read_text(encoding="utf-8"))]
    assert not found, found


def test_every_figure_table_of_performance_has_its_command() -> None:
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", page, flags=re.M)[1:]
    tables = [s for s in sections if re.search(r"^\|.*\d.*\|$", s, re.M)]
    assert len(tables) >= 6
    missing = [s.splitlines()[0] for s in tables if "python -m benchmarks" not in s]
    assert not missing, f"sections with figures and no command: {missing}"


# -- one version -------------------------------------------------------------------------------


def _release() -> str:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert released, "the changelog names no release"
    return str(released[0])


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_the_version_is_one_version() -> None:
    import simstore

    release = _release()
    assert simstore.__version__ == release
    shown = subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    assert shown.split()[-1] == release


def _deprecation_messages() -> list[str]:
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old_paths = ("simstore.verify", "simstore.migrate", "simstore.policy.verify")
        for name in (*old_paths, "simstore.policy.validate"):
            sys.modules.pop(name, None)
            __import__(name)
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    return [m for m in messages if "simstore" in m or "SimStore" in m]


def test_every_deprecation_names_a_removal_after_this_release() -> None:
    release = _minor(_release())
    messages = _deprecation_messages()
    assert len(messages) >= 4, messages
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for message in messages:
        removal = re.search(r"removed in (\d+\.\d+)", message)
        assert removal, f"a deprecation must say when the old name goes: {message!r}"
        assert _minor(removal.group(1)) > release, message
        assert f"removed in {removal.group(1)}" in changelog, message
        assert all(
            _minor(v) <= (release[0], release[1] + 2) for v in re.findall(r"\d+\.\d+", message)
        )


def test_source_version_words_agree() -> None:
    """Every "0.N" in the package's prose about versions is this release, the one before, or a
    deprecation's announced removal (0.4, 0.5), never a stale future one."""
    release = _minor(_release())
    allowed = {f"{release[0]}.{release[1] + step}" for step in (-1, 0, 1, 2)}
    pattern = re.compile(r"(?:before|since|until|in|of|simstore) (0\.[1-9])(?![\d%.])")
    for path in (ROOT / "simstore").rglob("*.py"):
        for version in pattern.findall(path.read_text(encoding="utf-8")):
            assert version in allowed, f"{path.relative_to(ROOT)} speaks of {version}"


def test_the_docs_page_list_is_the_site() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w-]+\.md)$", config, re.M))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert listed == pages
