#!/usr/bin/env python3
"""Self-test of check_layers.py on small fixture trees: it passes a tree that keeps its layer
graph and fails, naming the culprit, on an upward or sideways include, a file in no layer, an
include that resolves nowhere, an upward link (also behind $<LINK_ONLY:...>), an include
directory of a layer above, and a folder added before a layer it uses."""

import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")

LAYERS = """\
roots: lib drivers .
scan: lib drivers
lib/a:
lib/b: lib/a
lib/c: lib/a
drivers/d: lib/b
"""

CLEAN = {
    "cmake/layers.txt": LAYERS,
    "CMakeLists.txt": "set(UROCE_LAYERS\n  lib/a lib/c lib/b drivers/d tests)\n",
    "lib/a/base.h": "#pragma once\n#include <cstdint>\n",
    "lib/a/base.cc": '#include "a/base.h"\n',
    "lib/b/mid.h": '#pragma once\n#include "a/base.h"\n',
    "lib/b/mid.cc": '#include "mid.h"\n#include "b/mid.h"\n',
    "lib/c/side.h": '#pragma once\n#include "a/base.h"\n',
    "drivers/d/drv.cc": '#include "b/mid.h"\n#include "a/base.h"\n#include "d/drv.h"\n',
    "drivers/d/drv.h": "#pragma once\n",
}


def targets_file(src, rows):
    """rows: (name, folder, links, include dirs), folders relative to src."""
    lines = []
    for name, folder, links, incs in rows:
        incs = ";".join(os.path.join(src, i) for i in incs)
        lines.append(f"{name}\tSTATIC_LIBRARY\t{os.path.join(src, folder)}\t{';'.join(links)}"
                     f"\t{incs}\n")
    return "".join(lines)


CLEAN_TARGETS = [
    ("ta", "lib/a", [], ["lib"]),
    ("tb", "lib/b", ["ta", "Threads::Threads"], ["lib"]),
    ("tc", "lib/c", ["$<LINK_ONLY:ta>"], ["lib"]),
    ("td", "drivers/d", ["tb", "ta"], ["lib", "drivers"]),
    ("some_test", "tests/x", ["td", "tc"], ["."]),
]


class CheckLayersTest(unittest.TestCase):
    def run_check(self, files, targets=None, extra=None):
        with tempfile.TemporaryDirectory() as src:
            tree = dict(CLEAN)
            tree.update(extra or {})
            tree.update(files)
            for rel, text in tree.items():
                if text is None:
                    continue
                path = os.path.join(src, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            cmd = [sys.executable, CHECK, "--source", src]
            if targets is not None:
                tfile = os.path.join(src, "targets.tsv")
                with open(tfile, "w", encoding="utf-8") as f:
                    f.write(targets_file(src, targets))
                cmd += ["--targets", tfile]
            p = subprocess.run(cmd, capture_output=True, text=True, check=False)
            return p.returncode, p.stdout + p.stderr

    def assert_fails(self, files, targets, *expected):
        """The check exits 1 on the clean tree changed by files and targets, printing each of
        the expected lines."""
        rc, out = self.run_check(files, targets)
        self.assertEqual(rc, 1, out)
        for line in expected:
            self.assertIn(line, out)

    def test_clean_tree_passes(self):
        rc, out = self.run_check({}, CLEAN_TARGETS)
        self.assertEqual(rc, 0, out)
        self.assertIn("layers ok: 4 layers", out)

    def test_upward_include_fails(self):
        self.assert_fails({"lib/a/base.cc": '#include "a/base.h"\n#include "b/mid.h"\n'}, None,
                          'lib/a/base.cc:2: #include "b/mid.h": lib/a may not use lib/b')

    def test_include_of_a_driver_from_lib_fails(self):
        self.assert_fails({"lib/b/mid.cc": '#include "d/drv.h"\n'}, None,
                          'lib/b/mid.cc:1: #include "d/drv.h": lib/b may not use drivers/d')

    def test_sideways_include_fails(self):
        self.assert_fails({"lib/c/side.h": '#pragma once\n#include "b/mid.h"\n'}, None,
                          'lib/c/side.h:2: #include "b/mid.h": lib/c may not use lib/b')

    def test_file_in_no_layer_fails(self):
        self.assert_fails({"lib/e/new.h": "#pragma once\n"}, None, "lib/e/new.h: in no layer")

    def test_unresolved_include_fails(self):
        self.assert_fails({"lib/b/mid.cc": '#include "nowhere/x.h"\n'}, None,
                          'lib/b/mid.cc:1: #include "nowhere/x.h" resolves to no file')

    def test_upward_link_fails(self):
        rows = CLEAN_TARGETS + [("ta2", "lib/a", ["$<LINK_ONLY:tb>"], ["lib"])]
        self.assert_fails({}, rows, "target ta2 (lib/a) links tb (lib/b): lib/a may not use it")

    def test_sideways_link_fails(self):
        rows = CLEAN_TARGETS + [("tc2", "lib/c", ["tb"], ["lib"])]
        self.assert_fails({}, rows, "target tc2 (lib/c) links tb (lib/b): lib/c may not use it")

    def test_include_directory_of_a_layer_above_fails(self):
        rows = CLEAN_TARGETS + [("tb2", "lib/b", [], ["lib", "drivers"]),
                                ("tc3", "lib/c", [], ["lib/b"])]
        self.assert_fails({}, rows,
                          "target tb2 (lib/b) has include directory drivers/, which holds only "
                          "layers lib/b may not use",
                          "target tc3 (lib/c) has include directory lib/b/ (lib/b): lib/c may not "
                          "use it")

    def test_folder_added_before_a_layer_it_uses_fails(self):
        self.assert_fails({"CMakeLists.txt": "set(UROCE_LAYERS lib/a drivers/d lib/b)\n"}, None,
                          "CMakeLists.txt: UROCE_LAYERS adds drivers/d before lib/b, which it uses")

    def test_cycle_in_the_graph_is_refused(self):
        rc, out = self.run_check({"cmake/layers.txt": LAYERS + "lib/x: lib/y\nlib/y: lib/x\n"})
        self.assertNotEqual(rc, 0, out)
        self.assertIn("layer cycle", out)


if __name__ == "__main__":
    unittest.main()
