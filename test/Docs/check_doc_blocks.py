#!/usr/bin/env python3
"""Runs the code blocks of Markdown documents that are meant to run.

The convention (docs/Architecture.md, Tests): a fenced code block is tested
according to its language and to an HTML comment on the last non-blank line
before its opening fence, which GitHub does not render:

  ```tfm                           a model file: `attnc check` must accept it
  <!-- doc-test: error MESSAGE -->  a ```tfm block that `attnc check` must
                                   reject with MESSAGE in its diagnostics
  <!-- doc-test: file PATH -->      write the block to PATH (any language);
                                   a ```tfm block is then checked as PATH
  <!-- doc-test: run -->            run a ```sh block with bash -e
  <!-- doc-test: output -->         every line of the block must appear, in
                                   order, among the lines the last block run
                                   printed (standard output and error
                                   together); `...` in a line matches any
                                   text, and runs of white space compare equal
  <!-- doc-test: skip -->           not tested

Other blocks are not tested. The blocks of one document run in order in one
temporary directory, which holds symbolic links to the checkout's build/,
models/, data/ and scripts/ (so `build/bin/attnc check models/x.tfm` works
as from the checkout), with the tools of build/bin first on PATH and ATTNC
naming the checkout.

Usage: check_doc_blocks.py --root CHECKOUT --bin BUILD/bin PATH...
PATH is a Markdown file or a directory of them. Prints one line per failure
and a summary; exits 1 when a block failed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>[a-z]+)\s*(?P<arg>.*?)\s*-->\s*$")
KINDS = {"skip", "error", "file", "run", "output"}
# A command of a run block may take this long (seconds).
RUN_TIMEOUT = 300


class Block:
    def __init__(self, path, line, lang, text, kind, arg):
        self.path = path
        self.line = line
        self.lang = lang
        self.text = text
        self.kind = kind
        self.arg = arg

    def where(self):
        return f"{self.path}:{self.line}"


def parse_blocks(path):
    """The fenced code blocks of a Markdown file, with their directives."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    errors = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        lang = m.group("info").strip().split(" ")[0] if m.group("info").strip() else ""
        start = i
        body = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
                break
            # The body of a block inside a list item is indented like its fence.
            line = lines[i]
            if indent and line.startswith(indent):
                line = line[len(indent):]
            body.append(line)
            i += 1
        i += 1
        # The directive: the last non-blank line before the fence.
        kind, arg = None, ""
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            d = DIRECTIVE.match(lines[j])
            if d:
                kind, arg = d.group("kind"), d.group("arg")
                if kind not in KINDS:
                    errors.append(f"{path}:{j + 1}: unknown doc-test directive '{kind}'; "
                                  f"expected one of {', '.join(sorted(KINDS))}")
                    kind = "skip"
        blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n", kind, arg))
    return blocks, errors


def squeeze(line):
    """`line` with its runs of white space made one space and none at its
    ends, so that aligned columns compare equal however wide they are."""
    return " ".join(line.split())


def output_matches(expected, actual):
    """Whether every line of `expected` is a line of `actual`, in order; a
    `...` in an expected line matches any text. White space is compared
    squeezed. Returns the first expected line not found, or None."""
    actual_lines = [squeeze(line) for line in actual.split("\n")]
    pos = 0
    for want in expected.rstrip("\n").split("\n"):
        want = squeeze(want)
        pattern = re.compile(
            "^" + ".*".join(re.escape(part) for part in want.split("...")) + "$")
        while pos < len(actual_lines) and not pattern.match(actual_lines[pos]):
            pos += 1
        if pos == len(actual_lines):
            return want
        pos += 1
    return None


class Runner:
    def __init__(self, root, bindir):
        self.root = os.path.abspath(root)
        self.bindir = os.path.abspath(bindir)
        self.failures = []
        self.counts = {"checked": 0, "error": 0, "file": 0, "run": 0,
                       "output": 0, "skip": 0}
        self.env = dict(os.environ)
        self.env["PATH"] = self.bindir + os.pathsep + self.env.get("PATH", "")
        self.env["ATTNC"] = self.root
        # The compiled models' commands print no terminal progress.
        self.env.pop("TERM", None)

    def fail(self, block, message, output=""):
        text = f"{block.where()}: {message}"
        if output:
            text += "\n" + "\n".join("  | " + line for line in output.rstrip().split("\n"))
        self.failures.append(text)

    def attnc_check(self, workdir, block, filename):
        path = os.path.join(workdir, filename)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(block.text)
        result = subprocess.run([os.path.join(self.bindir, "attnc"), "check", filename],
                                cwd=workdir, env=self.env, capture_output=True,
                                text=True, timeout=RUN_TIMEOUT)
        return result.returncode, result.stdout + result.stderr

    def run_document(self, path):
        blocks, errors = parse_blocks(path)
        for error in errors:
            self.failures.append(error)
        if not any(b.lang == "tfm" or b.kind for b in blocks):
            return
        workdir = tempfile.mkdtemp(prefix="doc-test-")
        try:
            for name in ["build", "models", "data", "scripts"]:
                target = os.path.join(self.root, name)
                if os.path.exists(target):
                    os.symlink(target, os.path.join(workdir, name))
            last_output = None
            for n, block in enumerate(blocks):
                last_output = self.run_block(workdir, block, n, last_output)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def run_block(self, workdir, block, n, last_output):
        """Tests one block; returns the output the next `output` block
        compares with."""
        kind = block.kind
        if kind == "skip":
            self.counts["skip"] += 1
            return last_output
        if kind == "output":
            self.counts["output"] += 1
            if last_output is None:
                self.fail(block, "an output block follows no block that was run")
                return last_output
            missing = output_matches(block.text, last_output)
            if missing is not None:
                self.fail(block, f"the output of the block before lacks the line '{missing}'",
                          last_output)
            return last_output
        if kind == "run":
            if block.lang not in ("sh", "bash"):
                self.fail(block, f"a run block must be ```sh, not '{block.lang}'")
                return last_output
            self.counts["run"] += 1
            try:
                result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text],
                                        cwd=workdir, env=self.env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        errors="replace", timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.fail(block, f"the commands ran for more than {RUN_TIMEOUT} s")
                return ""
            output = result.stdout
            if result.returncode != 0:
                self.fail(block, f"the commands failed with exit status {result.returncode}",
                          output)
            return output
        if kind == "file":
            if not block.arg:
                self.fail(block, "a file block needs a path: <!-- doc-test: file PATH -->")
                return last_output
            path = os.path.join(workdir, block.arg)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.counts["file"] += 1
            if block.lang != "tfm":
                with open(path, "w", encoding="utf-8") as f:
                    f.write(block.text)
                return last_output
            status, output = self.attnc_check(workdir, block, block.arg)
            if status != 0:
                self.fail(block, f"attnc check rejects {block.arg}", output)
            return last_output
        if block.lang != "tfm":
            if kind == "error":
                self.fail(block, "an error block must be ```tfm")
            return last_output
        filename = f"block-{n}.tfm"
        status, output = self.attnc_check(workdir, block, filename)
        if kind == "error":
            self.counts["error"] += 1
            if not block.arg:
                self.fail(block, "an error block needs its message: <!-- doc-test: error MESSAGE -->")
            elif status == 0:
                self.fail(block, "attnc check accepts a model the document says is an error")
            elif block.arg not in output:
                self.fail(block, f"attnc check does not say '{block.arg}'", output)
            return last_output
        self.counts["checked"] += 1
        if status != 0:
            self.fail(block, "attnc check rejects the model", output)
        return last_output


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="the checkout")
    parser.add_argument("--bin", required=True, help="the directory of attnc")
    parser.add_argument("paths", nargs="+", help="Markdown files or directories")
    args = parser.parse_args()

    files = []
    for path in args.paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, name) for name in os.listdir(path)
                            if name.endswith(".md"))
        else:
            files.append(path)
    runner = Runner(args.root, args.bin)
    for path in files:
        runner.run_document(path)
    for failure in runner.failures:
        print("FAIL: " + failure)
    c = runner.counts
    print(f"{len(files)} documents: {c['checked']} models checked, {c['error']} errors "
          f"reported, {c['file']} files written, {c['run']} command blocks run, "
          f"{c['output']} outputs compared, {c['skip']} blocks skipped; "
          f"{len(runner.failures)} failed")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
