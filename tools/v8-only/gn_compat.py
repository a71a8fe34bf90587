#!/usr/bin/env python3
"""Makes a V8 tree's gn files readable by Debian bookworm's gn (2022-12).

The trees in the `v8` crate are written for a newer gn. What bookworm's gn lacks, and what this does:
- path_exists(): called only to detect Google's corporate machines, siso/reclient configs, a
  previous ninja build, sysroots and clang-module maps, none of which this build uses. A call in an
  assert() becomes `true` (the check passes), any other call `false` (the feature is absent).
- tool("cxx_module"): Clang's C++ modules, with substitutions the old gn does not know; a gcc build
  never uses them, so the tool blocks are removed.
- Variables the old gn does not know where they are set (a config's c_additional_outputs, for
  split-DWARF .dwo files this build does not make; a tool's inputs, naming the archiver for
  rebuilds): their assignments are removed (UNKNOWN_LIST_VARIABLES).
- Substitutions of Clang's C++ modules in the compile commands (`{{cc_module_name}}`, in the
  -fmodule-name flag, and `{{module_deps}}`), which the old gn does not know: they name and list
  module maps, and expand to nothing but that flag in a build without modules (use_clang_modules is
  off here); the flag (a module's name, meaningless without -fmodules) and the substitution are
  removed (MODULE_SUBSTITUTIONS).
- An assignment that a template never reads is an error in the old gn, a no-op in newer ones: such
  lines, listed in UNUSED_ASSIGNMENTS, are removed.
Nothing here changes what is compiled or how: compile lines come from the unchanged config files.

Usage: gn_compat.py <tree>   (idempotent; prints the files it changed)
"""
import pathlib
import re
import sys

# (file, variable) pairs: list assignments the old gn does not accept there.
UNKNOWN_LIST_VARIABLES = [
    ("build/config/compiler/BUILD.gn", "c_additional_outputs"),
    ("build/toolchain/gcc_toolchain.gni", "inputs"),
]

# (file, exact line) pairs that the old gn rejects as "Assignment had no effect".
UNUSED_ASSIGNMENTS = [
    ("build/config/BUILDCONFIG.gn", "generate_modulemap = default_modulemap_mode"),
]


# (file, text, replacement): Clang-module substitutions the old gn does not know.
MODULE_SUBSTITUTIONS = [
    ("build/toolchain/gcc_toolchain.gni", ' -fmodule-name=\\"{{cc_module_name}}_Private\\"', ""),
    ("build/toolchain/gcc_toolchain.gni", " {{module_deps}}", ""),
]


def replace_calls(text, name):
    out = []
    i = 0
    pattern = re.compile(r"\b" + name + r"\(")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        depth = 0
        j = m.end() - 1
        while True:
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        before = text[: m.start()].rstrip()
        value = "true" if before.endswith("assert(") else "false"
        out.append(text[i : m.start()])
        out.append(value)
        i = j + 1


def remove_blocks(text, opener):
    while True:
        start = text.find(opener)
        if start < 0:
            return text
        depth = 0
        j = text.index("{", start)
        while True:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        line_start = text.rfind("\n", 0, start) + 1
        text = text[:line_start] + text[j + 1 :].lstrip(" ").removeprefix("\n")


def remove_list_assignments(text, name):
    pattern = re.compile(r"^[ \t]*" + name + r"\s*(\+?=)\s*\[", re.M)
    while True:
        m = pattern.search(text)
        if not m:
            return text
        end = text.index("]", m.end())
        text = text[: m.start()] + text[end + 1 :].removeprefix("\n")


def main():
    tree = pathlib.Path(sys.argv[1])
    for path in sorted(tree.joinpath("build").rglob("*.gn*")):
        text = path.read_text()
        new = replace_calls(text, "path_exists") if "path_exists(" in text else text
        new = remove_blocks(new, 'tool("cxx_module")')
        for rel, name in UNKNOWN_LIST_VARIABLES:
            if path == tree / rel:
                new = remove_list_assignments(new, name)
        for rel, old, replacement in MODULE_SUBSTITUTIONS:
            if path == tree / rel:
                new = new.replace(old, replacement)
        for rel, line in UNUSED_ASSIGNMENTS:
            if path == tree / rel:
                new = "\n".join(l for l in new.split("\n") if l.strip() != line)
        if new != text:
            path.write_text(new)
            print(path.relative_to(tree))


if __name__ == "__main__":
    main()
