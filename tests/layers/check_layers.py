#!/usr/bin/env python3
"""Checks uroce's layer graph (cmake/layers.txt, docs/layers.md).

Checks, against the closure of the graph (a layer may use what its line names and,
transitively, what those use):
  includes   every #include "..." of a .h/.cc/.c/.inc file under the scanned folders resolves
             to a file of the including layer or of a layer it may use;
  links      every link from a target of a layer to a target of another layer (the build
             tree's targets file, written by cmake/layers.cmake) goes to a layer it may use;
  include directories  no target of a layer has an include directory that holds only layers
             it may not use (e.g. drivers/ on a lib/ target);
  folder order  the top CMakeLists.txt adds each layer's folder after the layers it uses.
Prints one line per violation and exits 1 if there is any.

Usage: check_layers.py --source DIR [--layers FILE] [--targets FILE]
"""

import argparse
import os
import re
import sys

SOURCE_EXTS = (".h", ".cc", ".c", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


class Graph:
    """The layers file: layer folders, what each uses, include roots, scanned folders."""

    def __init__(self, path):
        self.uses = {}  # layer folder -> [layer folders it names]
        self.roots = []
        self.scan = []
        with open(path, encoding="utf-8") as f:
            for n, raw in enumerate(f, 1):
                line = raw.split("#", 1)[0].strip()
                if not line:
                    continue
                key, sep, rest = line.partition(":")
                if not sep:
                    raise SystemExit(f"{path}:{n}: expected '<folder>: <layers>'")
                key, words = key.strip(), rest.split()
                if key == "roots":
                    self.roots = words
                elif key == "scan":
                    self.scan = words
                else:
                    if key in self.uses:
                        raise SystemExit(f"{path}:{n}: layer {key} listed twice")
                    self.uses[key] = words
        for layer, deps in self.uses.items():
            for d in deps:
                if d not in self.uses:
                    raise SystemExit(f"{path}: {layer} uses {d}, which is no layer")
        self.allowed = {layer: self._closure(layer, []) for layer in self.uses}

    def _closure(self, layer, stack):
        if layer in stack:
            raise SystemExit("layer cycle: " + " -> ".join(stack + [layer]))
        out = {layer}
        for d in self.uses[layer]:
            out |= self._closure(d, stack + [layer])
        return out

    def layer_of(self, rel):
        """The layer a source-relative path belongs to (longest folder prefix), or None."""
        rel = rel.replace(os.sep, "/")
        best = None
        for layer in self.uses:
            if rel == layer or rel.startswith(layer + "/"):
                if best is None or len(layer) > len(best):
                    best = layer
        return best


def norm(path):
    return os.path.normpath(path).replace(os.sep, "/")


def resolve(src, graph, includer, name):
    """Source-relative path of the file `#include "name"` in `includer` reads, or None."""
    for base in [os.path.dirname(includer)] + graph.roots:
        rel = norm(os.path.join(base, name))
        if not rel.startswith("../") and os.path.isfile(os.path.join(src, rel)):
            return rel
    return None


def check_includes(src, graph):
    errors = []
    for top in graph.scan:
        for dirpath, dirnames, files in os.walk(os.path.join(src, top)):
            dirnames.sort()
            for fname in sorted(files):
                if not fname.endswith(SOURCE_EXTS):
                    continue
                rel = norm(os.path.relpath(os.path.join(dirpath, fname), src))
                layer = graph.layer_of(rel)
                if layer is None:
                    errors.append(f"{rel}: in no layer of the layers file")
                    continue
                with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        name = m.group(1)
                        target = resolve(src, graph, rel, name)
                        if target is None:
                            # Generated headers (e.g. verbs/private_abi.h in the build tree):
                            # the layer whose folder the path names under an include root.
                            for root in graph.roots:
                                t = graph.layer_of(norm(os.path.join(root, name)))
                                if t is not None:
                                    target = norm(os.path.join(root, name))
                                    break
                        if target is None:
                            errors.append(f'{rel}:{n}: #include "{name}" resolves to no file')
                            continue
                        used = graph.layer_of(target)
                        if used is None:
                            errors.append(f'{rel}:{n}: #include "{name}" ({target}) is in no '
                                          "layer")
                        elif used not in graph.allowed[layer]:
                            errors.append(f'{rel}:{n}: #include "{name}": {layer} may not use '
                                          f"{used}")
    return errors


GENEX_WRAPPERS = re.compile(r"^\$<(?:LINK_ONLY|BUILD_INTERFACE):(.*)>$")


def read_targets(path, src):
    """name -> (layer folder relative to src or None, [link items], [include dirs])."""
    targets = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                continue
            name, _type, folder, links, incs = parts

            def items(s):
                out = []
                for it in filter(None, s.split(";")):
                    m = GENEX_WRAPPERS.match(it)
                    it = m.group(1) if m else it
                    if it not in out:
                        out.append(it)
                return out

            rel = norm(os.path.relpath(folder, src))
            targets[name] = (rel, items(links), items(incs))
    return targets


def check_targets(src, graph, targets):
    errors = []
    src_abs = os.path.realpath(src)
    roots = {norm(r) for r in graph.roots}
    for name, (folder, links, incs) in sorted(targets.items()):
        layer = graph.layer_of(folder)
        if layer is None:
            continue  # tests, bench, fuzz, packaging: on top
        for dep in links:
            if dep not in targets:
                continue  # a system library or an imported target
            used = graph.layer_of(targets[dep][0])
            if used is None or used not in graph.allowed[layer]:
                errors.append(f"target {name} ({layer}) links {dep} "
                              f"({used or targets[dep][0]}): {layer} may not use it")
        for inc in incs:
            real = os.path.realpath(inc)
            if os.path.commonpath([real, src_abs]) != src_abs:
                continue  # the build tree or the system
            rel = norm(os.path.relpath(real, src_abs))
            if rel in roots:
                # A shared root: fine if it holds a layer this one may use.
                held = [l for l in graph.uses if rel == "." or l.startswith(rel + "/") or l == rel]
                if not any(l in graph.allowed[layer] for l in held):
                    errors.append(f"target {name} ({layer}) has include directory {rel}/, "
                                  f"which holds only layers {layer} may not use")
                continue
            used = graph.layer_of(rel)
            if used is not None and used not in graph.allowed[layer]:
                errors.append(f"target {name} ({layer}) has include directory {rel}/ "
                              f"({used}): {layer} may not use it")
    return errors


FOLDERS_RE = re.compile(r"set\(UROCE_LAYERS\s+([^)]*)\)")


def check_folder_order(src, graph):
    """The top CMakeLists.txt adds the folders of UROCE_LAYERS in order, and a folder's
    if(TARGET ...) sees only the folders added before it: each layer must come after the
    layers it uses."""
    path = os.path.join(src, "CMakeLists.txt")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        m = FOLDERS_RE.search(f.read())
    if not m:
        return ["CMakeLists.txt: no set(UROCE_LAYERS ...) to check the folder order of"]
    order = m.group(1).split()
    errors = []
    for i, folder in enumerate(order):
        for used in graph.uses.get(folder, []):
            if used in order and order.index(used) > i:
                errors.append(f"CMakeLists.txt: UROCE_LAYERS adds {folder} before {used}, "
                              "which it uses")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--layers", help="the layers file (default: SOURCE/cmake/layers.txt)")
    ap.add_argument("--targets", help="the build tree's targets file (cmake/layers.cmake)")
    args = ap.parse_args()
    src = args.source
    graph = Graph(args.layers or os.path.join(src, "cmake", "layers.txt"))
    errors = check_includes(src, graph) + check_folder_order(src, graph)
    if args.targets:
        errors += check_targets(src, graph, read_targets(args.targets, src))
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layer violation(s); the graph is cmake/layers.txt "
              "(docs/layers.md)")
        return 1
    print(f"layers ok: {len(graph.uses)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
