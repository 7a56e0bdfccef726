#!/usr/bin/env python3
"""docs-check: re-run every command whose output a doc pastes, and compare.

Usage: scripts/docs_check.py [--update] [--list] [FILE.md ...]

A doc marks a pasted output with an HTML comment right before it:

    <!-- docs-check: bin/ddpsim --topo 4gpu --format csv | cut -d, -f1-5 -->
    ```
    ...the command's stdout...
    ```

The command runs with bash (pipefail) in the repository root; it may span
lines up to `-->`, which are joined with spaces (one shell line: separate
statements with `;`). The block it checks is the fenced block that follows (its
lines between the fences, dedented by the fence's indentation), or, when the
next line is not a fence, the run of non-blank lines that follows (a
markdown table, an indented block). Lines compare with trailing spaces
stripped; trailing blank lines do not count.

Variants:
    <!-- docs-check exit=2: CMD -->      the command must exit 2 (stderr is
                                          not captured: write 2>&1 to paste it)
    <!-- docs-check skip: REASON -->      the block is not checked (timings
                                          of a real run, a published table);
                                          listed with its reason
    <!-- docs-check needs=PATH: CMD -->   checked as the plain form where PATH
                                          (from the repository root, e.g.
                                          ../shared/data/X.csv, an input kept
                                          beside the repository) exists; else
                                          not checked and listed, as the tests
                                          skip (cr_skip_test) without it

Paths: every backticked path into the repository's own folders (`sim/...`,
`docs/...`, `tests/...`; a module stem such as `sim/net/topo` counts when its
.c or .h exists; `*` and one `{a,b}` are globs; a token with `<`, `…` or an
all-caps placeholder segment such as `READER/` is skipped) in the files
given, or by default in those above and every folder's README.md, must name a
file or folder that exists; each missing one is reported as FILE:LINE and fails the check (exit 1,
with --update too).

Names: likewise every backticked name of the project's own (`ds_...`, `ds__...`, `DS_...`)
must occur in the code of the project's C sources (.c, .h, .inc, .cu outside tests/, and
the lines a .patch adds; their comments left out), so that a function, macro or struct renamed or removed is not left
named in a doc, nor named only where a comment still mentions it; the tests' code (tests/,
comments left out) counts too where the doc's line says "test" (`ds_test_run`, the tests'
helper). A name followed by `*` or `/`, or ending in `_`, is a prefix (`ds_units_parse_*`,
`DS_LEGACY_STRIDED/TRANSPOSED_CYCLES`) that one name of that code must begin with.
Backticks pair as markdown's code spans do, over a line break within a paragraph; fenced
blocks (pasted outputs) are literal text and not read for paths or names.

Without --update: prints a diff per stale block and exits 1 when any differs
(2 when a command fails or a marker is malformed). With --update: rewrites
every stale block in place with the fresh output (atomically, file by file)
and exits 0 unless a command failed. --list prints the markers and stops.

Default files: README.md, docs/*.md, real/README.md, bench/README.md,
bench/results/*/README.md.
Needs bin/ddpsim (make). Standard library only.
"""

import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"^\s*<!--\s*docs-check(?:\s+(?P<opt>[a-z]+(?:=[^\s:]+)?))?\s*:(?P<body>.*)$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<info>.*)$")
TIMEOUT_S = 600  # a guard against a hung command, not a check


class Marker:
    def __init__(self, path, line, opt, command):
        self.path, self.line, self.opt, self.command = path, line, opt, command
        self.start = self.end = None  # block lines [start, end) of the file
        self.indent = ""
        self.expect_exit = 0
        self.skip = None
        self.fenced = None

    def where(self):
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line + 1)


def default_files():
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files += [os.path.join(ROOT, "real", "README.md"), os.path.join(ROOT, "bench", "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "bench", "results", "*", "README.md")))
    return [f for f in files if os.path.exists(f)]


def parse(path, lines):
    """The markers of one file, with their blocks located."""
    markers, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        first = i
        body = m.group("body")
        while "-->" not in body:
            i += 1
            if i >= len(lines):
                raise SyntaxError("%s:%d: docs-check marker without -->" % (path, first + 1))
            body += " " + lines[i].strip()
        command = body[: body.index("-->")].strip()
        mk = Marker(path, first, m.group("opt"), command)
        opt = mk.opt or ""
        if opt == "skip":
            mk.skip = command or "no reason given"
        elif re.fullmatch(r"exit=\d+", opt):
            mk.expect_exit = int(opt[5:])
        elif opt.startswith("needs=") and len(opt) > 6:
            if not os.path.exists(os.path.join(ROOT, opt[6:])):
                mk.skip = "needs %s, which is not beside the repository" % opt[6:]
        elif opt:
            raise SyntaxError("%s:%d: unknown docs-check option %r (skip, exit=N, needs=PATH)"
                              % (path, first + 1, opt))
        if not command:
            raise SyntaxError("%s:%d: docs-check marker without a command" % (path, first + 1))
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines):
            raise SyntaxError("%s:%d: docs-check marker with no block after it" % (path, first + 1))
        f = FENCE.match(lines[j])
        if f:
            k = j + 1
            close = re.compile(r"^\s*" + re.escape(f.group("fence")) + r"\s*$")
            while k < len(lines) and not close.match(lines[k]):
                k += 1
            if k >= len(lines):
                raise SyntaxError("%s:%d: unclosed fence" % (path, j + 1))
            mk.start, mk.end, mk.indent = j + 1, k, f.group("indent")
            mk.fenced = True
        else:
            k = j
            while k < len(lines) and lines[k].strip():
                k += 1
            mk.start, mk.end = j, k
            mk.fenced = False
            mk.indent = re.match(r"^\s*", lines[j]).group(0)
        markers.append(mk)
        i = mk.end
    return markers


SOURCE_EXTS = (".c", ".h", ".inc", ".cu", ".py", ".sh", ".patch")
NAME_TOKEN = re.compile(r"(?<![\w.])((?:ds_|DS_)\w+)([*/]?)")
PATH_TOPS = ("analysis", "base", "bench", "docs", "fuzz", "models", "real", "scripts",
             "sim", "tests", "tools", "topologies", "traces", "validation")
PATH_TOKEN = re.compile(r"(?<![\w./-])((?:%s)/[\w./*{},-]*)" % "|".join(PATH_TOPS))
# a code span: backticks around text that may go on over a line break, not a blank line
SPAN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")
FENCE_LINE = re.compile(r"^\s*(```+|~~~+)")


def path_files():
    """The folders' READMEs, whose backticked repository paths must exist too."""
    files = sorted(glob.glob(os.path.join(ROOT, "*", "README.md")))
    files += sorted(glob.glob(os.path.join(ROOT, "sim", "*", "README.md")))
    return [f for f in files if os.path.exists(f)]


def path_exists(path):
    pats = [path]
    m = re.search(r"\{([^{}]*)\}", path)
    if m:
        pats = [path[:m.start()] + alt + path[m.end():] for alt in m.group(1).split(",")]
    for p in pats:
        q = os.path.join(ROOT, p)
        if not any(glob.glob(q + ext) for ext in ("", ".c", ".h")):
            return False
    return True


def code_spans(path):
    """(line, text) of each backticked span of a doc outside its fenced blocks. A span
    may go on over a line break, as markdown's do, so the pairing of backticks is the
    paragraph's, not the line's; line is where the span begins."""
    with open(path) as fp:
        lines = fp.read().split("\n")
    fence = None
    for k, l in enumerate(lines):  # fenced blocks blanked, so line numbers stay
        m = FENCE_LINE.match(l)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            lines[k] = ""
        elif m:
            fence = m.group(1)
            lines[k] = ""
    text = "\n".join(lines)
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in SPAN.finditer(text)]


def missing_paths(path):
    """(line, path) of each backticked repository path of one doc that names nothing."""
    out = []
    for n, tick in code_spans(path):
        if "<" in tick or "\u2026" in tick:
            continue
        for m in PATH_TOKEN.finditer(tick):
            tok = m.group(1).rstrip(".,;:")
            if re.search(r"/[A-Z][A-Z0-9_]*(/|\.|$)", tok):
                continue
            if not path_exists(tok):
                out.append((n + tick.count("\n", 0, m.start()), tok))
    return out


C_EXTS = (".c", ".h", ".inc", ".cu")
# what C code holds besides code: comments, and the literals a comment marker
# inside them must not start one in (a "/*" in a string is no comment)
C_LEXEME = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def without_comments(text):
    """C text with its comments blanked, its string and character literals kept."""
    return C_LEXEME.sub(lambda m: " " if m.group(0)[0] == "/" else m.group(0), text)


def code_names():
    """(names, test_names): every word of the code of the project's C sources, comments
    left out, outside tests/ and in tests/; a .patch's added lines are C code too (a
    scratch build's, bench/scratch/)."""
    names, test_names = set(), set()
    for top in PATH_TOPS:
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith(C_EXTS + (".patch",)):
                    continue
                with open(os.path.join(d, f), errors="replace") as fp:
                    text = fp.read()
                if f.endswith(".patch"):
                    text = "\n".join(l[1:] for l in text.split("\n")
                                     if l.startswith("+") and not l.startswith("+++"))
                words = re.findall(r"\w+", without_comments(text))
                (test_names if top == "tests" else names).update(words)
    return names, test_names


def missing_names(path, names, test_names):
    """(line, name) of each backticked ds_/DS_ name of one doc that the code (the tests'
    too where the line says "test") does not have."""
    out = []
    with open(path) as fp:
        lines = fp.read().split("\n")
    for n, tick in code_spans(path):
        for m in NAME_TOKEN.finditer(tick):
            name, tail = m.groups()
            at = n + tick.count("\n", 0, m.start())
            # the line's own words, its names aside (`ds_test_run` says nothing of tests)
            says_test = re.search(r"(?<![a-z])test", NAME_TOKEN.sub("", lines[at - 1]).lower())
            have = names | test_names if says_test else names
            if tail or name.endswith("_"):
                if not any(p.startswith(name) for p in have if p.startswith(("ds_", "DS_"))):
                    out.append((at, name))
            elif name not in have:
                out.append((at, name))
    return out


def normalize(text_lines):
    out = [l.rstrip() for l in text_lines]
    while out and not out[-1]:
        out.pop()
    return out


def block_lines(mk, lines):
    body = []
    for l in lines[mk.start:mk.end]:
        body.append(l[len(mk.indent):] if l.startswith(mk.indent) else l.lstrip())
    return normalize(body)


def run(mk):
    """stdout lines of the marker's command, or raise RuntimeError."""
    try:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", mk.command], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s: command ran over %d s: %s" % (mk.where(), TIMEOUT_S, mk.command))
    if p.returncode != mk.expect_exit:
        raise RuntimeError("%s: command exited %d (expected %d): %s\n%s" % (
            mk.where(), p.returncode, mk.expect_exit, mk.command,
            p.stderr.decode("utf-8", "replace")[-2000:]))
    return normalize(p.stdout.decode("utf-8", "replace").split("\n"))


def write_atomic(path, text):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".docs-check.", dir=d)
    try:
        with os.fdopen(fd, "w") as fp:
            fp.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv):
    update = "--update" in argv
    list_only = "--list" in argv
    given = [os.path.abspath(a) for a in argv if not a.startswith("--")]
    files = given or default_files()
    stale = failed = checked = 0
    skipped = []
    for path in files:
        with open(path) as fp:
            text = fp.read()
        lines = text.split("\n")
        try:
            markers = parse(path, lines)
        except (SyntaxError, ValueError) as e:
            print("docs-check: %s" % e, file=sys.stderr)
            return 2
        if list_only:
            for mk in markers:
                print("%s: %s%s" % (mk.where(), "skip: " if mk.skip else "", mk.command))
            continue
        replace = []  # (start, end, new lines)
        for mk in markers:
            if mk.skip:
                skipped.append(mk)
                continue
            try:
                fresh = run(mk)
            except RuntimeError as e:
                print("docs-check: %s" % e, file=sys.stderr)
                failed += 1
                continue
            checked += 1
            old = block_lines(mk, lines)
            if fresh == old:
                continue
            stale += 1
            if update and mk.fenced is False and "" in fresh:
                print("docs-check: %s: the output has blank lines, which would end an "
                      "unfenced block: put it in a fenced block" % mk.where(), file=sys.stderr)
                failed += 1
                continue
            if update:
                replace.append((mk.start, mk.end, [(mk.indent + l) if l else "" for l in fresh]))
                print("docs-check: updated %s (%s)" % (mk.where(), mk.command.split("\n")[0]))
            else:
                print("docs-check: %s is stale: %s" % (mk.where(), mk.command))
                sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
                    old, fresh, "pasted", "fresh", lineterm="", n=1))
        if replace:
            for start, end, new in sorted(replace, reverse=True):
                lines[start:end] = new
            write_atomic(path, "\n".join(lines))
    if list_only:
        return 0
    paths_missing = names_missing = 0
    names, test_names = code_names()
    for path in (given or sorted(set(files) | set(path_files()))):
        for n, tok in missing_paths(path):
            print("docs-check: %s:%d: `%s` names no file or folder of the repository"
                  % (os.path.relpath(path, ROOT), n, tok))
            paths_missing += 1
        for n, name in missing_names(path, names, test_names):
            print("docs-check: %s:%d: `%s` is named in no code of the repository (comments "
                  "aside; tests/ where the line says \"test\")"
                  % (os.path.relpath(path, ROOT), n, name))
            names_missing += 1
    for mk in skipped:
        print("docs-check: not checked %s (%s)" % (mk.where(), mk.skip))
    print("docs-check: %d blocks checked, %d %s, %d not checked, %d commands failed; "
          "%d backticked paths missing, %d backticked names missing"
          % (checked, stale, "updated" if update else "stale", len(skipped),
             failed, paths_missing, names_missing))
    if failed:
        return 2
    if paths_missing or names_missing:
        return 1
    return 0 if update or stale == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
